"""A real HF Trainer (transformers, CPU) on a 5-parameter model, with rlaunch_job.StopCallback: the stop request
arrives during an evaluation inside training (tests/test_stop.py). Usage: hf_stop.py NODE_DIR OUT_DIR; the request
file is $RLAUNCH_STOP_FILE, written by a callback at the first prediction step of the evaluation at step 4."""

import os
import sys

sys.path.insert(0, sys.argv[1])
import rlaunch_job
import torch
from transformers import Trainer, TrainerCallback, TrainingArguments

STOP_FILE = os.environ["RLAUNCH_STOP_FILE"]


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> dict:
        y = self.lin(x).squeeze(-1)
        return {"loss": torch.nn.functional.mse_loss(y, labels), "logits": y}


class Notice(TrainerCallback):
    def on_prediction_step(self, args, state, control, **kw) -> None:
        if state.global_step == 4 and not os.path.exists(STOP_FILE):
            with open(STOP_FILE, "w") as f:
                f.write("{}")


torch.manual_seed(0)
data = [{"x": torch.randn(4), "labels": torch.randn(())} for _ in range(64)]
args = TrainingArguments(
    output_dir=sys.argv[2],
    max_steps=50,
    per_device_train_batch_size=2,
    save_strategy="no",  # no periodic save: the one checkpoint is the stop's
    eval_strategy="steps",
    eval_steps=4,
    per_device_eval_batch_size=2,
    report_to=[],
    use_cpu=True,
    disable_tqdm=True,
)
trainer = Trainer(
    model=Tiny(),
    args=args,
    train_dataset=data,
    eval_dataset=data[:16],
    callbacks=[Notice(), rlaunch_job.StopCallback()],
)
trainer.train()
print("finished without a stop")
