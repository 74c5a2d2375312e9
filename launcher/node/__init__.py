"""Files pushed to nodes and run with the node's own Python.

Rule of the house: modules here use the standard library (and the node's torch) only and import nothing
from rlaunch, because the nodes have only the user's training environment.
"""
