"""Cluster side of rlaunch: inventory, transports, node facts. Never imports `launcher`."""
