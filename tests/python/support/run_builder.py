"""Build synthetic training runs in the canonical five-file format, one planted problem at a time.

`RunBuilder()` starts from a healthy run: one epoch over 30 shards of 256
examples (8 steps each at batch 32), warmup + cosine LR exactly as configured,
a smoothly falling loss with realistic noise, grad norms under the clip limit,
steady step times with slow checkpoint saves, and evaluations every 20 steps.
Each `plant_*` method changes the run in one way; `write(folder)` writes it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from run_diagnosis.importers.canonical import loss_terms_changed_event, written_several_times_event
from run_diagnosis.run_files import run_file

SOURCES = ["python_docs", "github_code", "licenses", "changelogs", "forum_posts"]


def accuracy_of(val_loss: Any) -> Any:
    """The builder's validation accuracy for a validation loss: 0.25 - 0.03 x loss (a model that
    carries information: well above e^-loss, so no evaluation reads as a uniform guess unless a
    planter sets the accuracy itself)."""
    return np.clip(0.25 - 0.03 * val_loss, 0, 1)


@dataclass
class RunBuilder:
    total_steps: int = 240
    n_shards: int = 30
    examples_per_shard: int = 256
    batch_size: int = 32
    peak_lr: float = 3e-3
    min_lr: float = 3e-4
    warmup_steps: int = 20
    grad_clip_norm: float = 1.0
    eval_interval: int = 20
    checkpoint_interval: int = 50
    seed: int = 7
    noise: float = 0.02
    prefix: str = "fixture_"
    config_overrides: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        self.rng = rng
        steps = np.arange(1, self.total_steps + 1)
        steps_per_visit = math.ceil(self.examples_per_shard / self.batch_size)
        order = list(rng.permutation(self.n_shards))
        shard_of_step = [order[((s - 1) // steps_per_visit) % self.n_shards] for s in steps]
        self.shards = pd.DataFrame(
            {
                "shard_id": range(self.n_shards),
                "n_examples": [self.examples_per_shard] * self.n_shards,
                "source": [SOURCES[i % len(SOURCES)] for i in range(self.n_shards)],
            }
        )
        source_offset = {name: 1 + 0.03 * (i - 2) for i, name in enumerate(SOURCES)}
        base = 3.0 + 2.7 * np.exp(-steps / 12.0) + 0.35 * np.exp(-steps / 120.0)
        offsets = np.array([source_offset[SOURCES[s % len(SOURCES)]] for s in shard_of_step])
        loss = base * offsets * np.exp(rng.normal(0, self.noise, len(steps)))
        grad = np.clip(0.35 + 0.5 * np.exp(-steps / 30.0) + rng.normal(0, 0.04, len(steps)), 0.05, 0.95)
        step_time = 0.12 * np.exp(rng.normal(0, 0.04, len(steps)))
        step_time[steps % self.checkpoint_interval == 0] = 0.95
        self.train = pd.DataFrame(
            {
                "step": steps,
                "shard_id": shard_of_step,
                "loss": loss,
                "grad_norm": grad,
                "learning_rate": [self.schedule(s) for s in steps],
                "step_time_sec": step_time,
            }
        )
        eval_steps = np.arange(0, self.total_steps + 1, self.eval_interval)
        val = 3.05 + 2.7 * np.exp(-np.maximum(eval_steps, 1) / 12.0) + 0.4 * np.exp(-eval_steps / 120.0)
        val = val * np.exp(rng.normal(0, 0.003, len(eval_steps)))
        self.evals = pd.DataFrame({"step": eval_steps, "val_loss": val, "val_accuracy": accuracy_of(val)})
        events = [(0, f"run started: fixture, {self.total_steps} steps, batch {self.batch_size}")]
        events += [
            (s, f"checkpoint saved: step_{s:06d}.pt")
            for s in range(self.checkpoint_interval, self.total_steps + 1, self.checkpoint_interval)
        ]
        events.append((self.total_steps, "run finished: exit code 0"))
        self.events = pd.DataFrame(events, columns=["step", "event"])

    # --- the configured schedule ------------------------------------------
    def schedule(self, step: float, peak: float | None = None, decay_steps: int | None = None) -> float:
        peak = self.peak_lr if peak is None else peak
        decay = self.total_steps if decay_steps is None else decay_steps
        if step <= self.warmup_steps:
            return peak * step / self.warmup_steps
        if step >= decay:
            return self.min_lr
        progress = (step - self.warmup_steps) / (decay - self.warmup_steps)
        return self.min_lr + (peak - self.min_lr) * 0.5 * (1 + math.cos(math.pi * progress))

    def rows(self, first: int, last: int) -> pd.Series:
        return self.train["step"].between(first, last)

    # --- planted problems ----------------------------------------------------
    def plant_lr_scale(self, factor: float) -> RunBuilder:
        """The optimizer used factor x the configured peak (schedule shape kept)."""
        self.train["learning_rate"] = [
            self.schedule(s, peak=self.peak_lr * factor) for s in self.train["step"]
        ]
        return self

    def plant_decay_length(self, decay_steps: int) -> RunBuilder:
        self.train["learning_rate"] = [self.schedule(s, decay_steps=decay_steps) for s in self.train["step"]]
        return self

    def plant_no_warmup(self) -> RunBuilder:
        lr = [self.schedule(max(s, self.warmup_steps)) for s in self.train["step"]]
        self.train["learning_rate"] = lr
        return self

    def plant_epoch_means(self, noise: float = 0.005) -> RunBuilder:
        """One row an epoch (config rows_are = epoch): each loss the mean over the whole dataset,
        so no source offsets and little noise."""
        steps = self.train["step"].to_numpy()
        base = 3.0 + 2.7 * np.exp(-steps / 12.0) + 0.35 * np.exp(-steps / 120.0)
        self.train["loss"] = base * np.exp(self.rng.normal(0, noise, len(steps)))
        return self.plant_config(rows_are="epoch")

    def plant_level_jump(self, at: int, factor: float) -> RunBuilder:
        """The training loss from step `at` on is `factor` times what it would have been: a jump
        that stays (a checkpoint resumed without its optimizer state, a data switch)."""
        self.train.loc[self.train["step"] >= at, "loss"] *= factor
        return self

    def plant_loss_term_switch(self, at: int, term: str) -> RunBuilder:
        """The event a reader writes when a logged term of the loss switched on at `at` (exactly 0 on
        the rows before): from there the loss sums another objective."""
        event = pd.DataFrame([loss_terms_changed_event(at, term, True, at - 1)], columns=["step", "event"])
        self.events = pd.concat([self.events, event], ignore_index=True)
        return self

    def plant_no_decay(self) -> RunBuilder:
        """The warmup as configured, then the peak LR to the end: the decay never happens (a scheduler
        of another library, e.g. DeepSpeed's WarmupLR, overriding the configured one)."""
        self.train["learning_rate"] = [self.schedule(min(s, self.warmup_steps)) for s in self.train["step"]]
        return self

    def plant_lr_halvings(self, from_step: int, every: int) -> RunBuilder:
        """A plateau scheduler halving the LR every `every` steps from `from_step` on (ReduceLROnPlateau
        with no min_lr): it falls by 2**k, under a ten-thousandth of its peak after 14 halvings."""
        self.train["learning_rate"] = [
            self.schedule(min(s, from_step)) * 0.5 ** max(0, (s - from_step) // every)
            for s in self.train["step"]
        ]
        return self

    def plant_constant_lr(self) -> RunBuilder:
        self.train["learning_rate"] = self.peak_lr
        return self

    def plant_clip_violation(self, first: int, last: int, factor: float) -> RunBuilder:
        mask = self.rows(first, last)
        self.train.loc[mask, "grad_norm"] = self.grad_clip_norm * factor * np.linspace(1, 0.8, mask.sum())
        return self

    def plant_grad_burst(self, at: int, length: int, norm: float) -> RunBuilder:
        """Gradient norms of `norm` (logged before clipping, as HF Trainer and Megatron do)."""
        self.train.loc[self.rows(at, at + length - 1), "grad_norm"] = norm
        self.config_overrides["grad_norm_measured"] = "before_clipping"
        return self

    def plant_loss_spike(self, at: int, length: int, factor: float) -> RunBuilder:
        mask = self.rows(at, at + length - 1)
        decay = np.linspace(factor, 1 + (factor - 1) * 0.4, mask.sum())
        self.train.loc[mask, "loss"] = self.train.loc[mask, "loss"] * decay
        return self

    def plant_bad_shard(self, factor: float) -> tuple[RunBuilder, str]:
        """The shard visited around the middle of the run holds broken data."""
        shard = self.train.loc[self.train["step"] == self.total_steps // 2, "shard_id"].iloc[0]
        mask = self.train["shard_id"] == shard
        self.train.loc[mask, "loss"] = self.train.loc[mask, "loss"] * factor
        return self, str(shard)

    def _log_text(self, column: str, steps: list[int], text: str) -> RunBuilder:
        """Write `text` (as the training system would, e.g. "nan") into `column` at `steps`."""
        self.train[column] = self.train[column].astype(object)
        self.train.loc[self.train["step"].isin(steps), column] = text
        return self

    def plant_nan(self, steps: list[int]) -> RunBuilder:
        return self._log_text("loss", steps, "nan")

    def plant_grad_overflow(self, steps: list[int]) -> RunBuilder:
        """A mixed-precision loss scaler skips these updates: the gradient norm is inf, the loss finite."""
        return self._log_text("grad_norm", steps, "inf")

    def plant_restart(self, crash_after: int, resume_from: int, unclipped_after: bool = False) -> RunBuilder:
        """Crash after `crash_after`, resume from the checkpoint at `resume_from`: the log replays steps."""
        before = self.train[self.train["step"] <= crash_after].copy()
        crashed = before[before["step"] > resume_from].copy()
        crashed["loss"] = crashed["loss"] * np.exp(self.rng.normal(0, 0.01, len(crashed)))
        after = self.train[self.train["step"] > resume_from].copy()
        if unclipped_after:
            first = after.index[:6]
            after.loc[first, "grad_norm"] = np.linspace(2.5, 1.3, len(first))
        kept = self.train[self.train["step"] <= resume_from]
        self.train = pd.concat([kept, crashed, after], ignore_index=True)
        self.events = pd.concat(
            [
                self.events,
                pd.DataFrame(
                    [
                        (
                            crash_after,
                            "worker exited unexpectedly (NCCL watchdog timeout on rank 3); job terminated",
                        ),
                        (
                            crash_after,
                            f"job restarted by scheduler; resuming from checkpoint step_{resume_from:06d}.pt",
                        ),
                    ],
                    columns=["step", "event"],
                ),
            ],
            ignore_index=True,
        )
        return self

    def plant_abandoned_launch(self, last_step: int, learned: bool = False) -> RunBuilder:
        """An earlier launch logged before the run, from its first step to `last_step`, then the log
        starts again at step 1 (the launch abandoned and the run started anew, appended to one log).
        Its loss stays at the run's start level (batch noise only) unless `learned` (then it is the
        run's own first steps, falling as usual)."""
        launch = self.train[self.train["step"] <= last_step].copy()
        if not learned:
            start = float(self.train["loss"].iloc[:3].mean())
            launch["loss"] = start * np.exp(self.rng.normal(0, self.noise, len(launch)))
        self.train = pd.concat([launch, self.train], ignore_index=True)
        return self

    def plant_epochs(self, epochs: int, staircase_drop: float = 0.0) -> RunBuilder:
        """Fewer shards, so the run makes `epochs` passes; optionally the loss drops at each boundary."""
        steps_per_visit = math.ceil(self.examples_per_shard / self.batch_size)
        n_shards = max(1, self.total_steps // (epochs * steps_per_visit))
        steps_per_epoch = n_shards * steps_per_visit
        self.shards = self.shards.head(n_shards).copy()
        orders = [list(self.rng.permutation(n_shards)) for _ in range(epochs + 1)]
        steps = self.train["step"].to_numpy()
        epoch = (steps - 1) // steps_per_epoch
        visit = ((steps - 1) % steps_per_epoch) // steps_per_visit
        self.train["shard_id"] = [orders[e][v] for e, v in zip(epoch, visit, strict=True)]
        if staircase_drop:
            self.train["loss"] = self.train["loss"] * (1 - staircase_drop) ** epoch
        return self

    def plant_overfitting(self, best_at: int, rise: float) -> RunBuilder:
        """Validation loss bottoms at `best_at` and climbs by `rise` (relative) by the end."""
        best = self.evals.loc[self.evals["step"] == best_at, "val_loss"].iloc[0]
        after = self.evals["step"] > best_at
        span = self.total_steps - best_at
        self.evals.loc[after, "val_loss"] = best * (
            1 + rise * (self.evals.loc[after, "step"] - best_at) / span
        )
        return self

    def plant_val_curve(self, start: float, plateau_at: int, late_fall: float) -> RunBuilder:
        """Validation loss falls evenly from `start` to 3.2 at `plateau_at`, then by `late_fall` (a
        share of 3.2) more, evenly, to the last evaluation (its best)."""
        level, steps = 3.2, self.evals["step"].to_numpy(dtype=float)
        early = start + (level - start) * np.minimum(steps, plateau_at) / plateau_at
        late = level * (1 - late_fall * np.clip((steps - plateau_at) / (self.total_steps - plateau_at), 0, 1))
        self.evals["val_loss"] = np.where(steps <= plateau_at, early, late)
        self.evals["val_accuracy"] = np.clip(0.35 - 0.03 * self.evals["val_loss"], 0, 1)
        return self

    def plant_stop_resume(self, at: int) -> RunBuilder:
        """A planned stop at step `at` and a resume from the checkpoint saved there, as a resumed
        script logs it: step `at` once more, no crash event (nothing went wrong)."""
        kept, again = self.train[self.train["step"] <= at], self.train[self.train["step"] == at].copy()
        again["loss"] = again["loss"] * 1.001
        self.train = pd.concat([kept, again, self.train[self.train["step"] > at]], ignore_index=True)
        stop = [
            (at, f"checkpoint saved: step_{at:06d}.pt"),
            (at, f"resuming from step {at}: loaded checkpoint step_{at:06d}.pt"),
        ]
        self.events = pd.concat(
            [self.events, pd.DataFrame(stop, columns=["step", "event"])], ignore_index=True
        )
        return self

    def plant_written_several_times(self, writers: int) -> RunBuilder:
        """The importer's note that every record was written `writers` times over (a process per GPU
        each writing every line) and read once: the rows stay as they are."""
        copies = (writers - 1) * len(self.train)
        note = written_several_times_event(int(self.train["step"].min()), copies, len(self.train))
        self.events = pd.concat(
            [self.events, pd.DataFrame([note], columns=["step", "event"])], ignore_index=True
        )
        return self

    def plant_early_stop(self, at: int) -> RunBuilder:
        """The run ends at step `at` of its configured total_steps, with no crash and no run-end
        event (a trial a pruner or early stopping ended)."""
        self.train = self.train[self.train["step"] <= at].reset_index(drop=True)
        self.evals = self.evals[self.evals["step"] <= at].reset_index(drop=True)
        self.events = self.events[
            (self.events["step"] <= at) & ~self.events["event"].str.startswith("run finished")
        ].reset_index(drop=True)
        return self

    def plant_contaminated_source(self) -> tuple[RunBuilder, str]:
        shard = self.train["shard_id"].iloc[self.total_steps // 3]
        self.shards.loc[self.shards["shard_id"] == shard, "source"] = "eval_holdout_set"
        return self, str(shard)

    def plant_val_below_train(self, gap: float) -> RunBuilder:
        smoothed = self.train.set_index("step")["loss"].rolling(20, min_periods=1).median()
        self.evals["val_loss"] = [
            (smoothed.loc[max(s, 1)] * (1 - gap)) if s > 0 else v
            for s, v in zip(self.evals["step"], self.evals["val_loss"], strict=True)
        ]
        return self

    def plant_slow_stretch(self, first: int, last: int, factor: float) -> RunBuilder:
        mask = self.rows(first, last)
        self.train.loc[mask, "step_time_sec"] = self.train.loc[mask, "step_time_sec"] * factor
        return self

    def plant_stall(self, step: int, factor: float) -> RunBuilder:
        self.train.loc[self.train["step"] == step, "step_time_sec"] = 0.12 * factor
        return self

    def plant_step_time_scale(self, factor: float) -> RunBuilder:
        """Every step takes `factor` times as long (a bigger model on the same loop)."""
        self.train["step_time_sec"] = self.train["step_time_sec"] * factor
        return self

    def plant_eval_time(self, seconds: float) -> RunBuilder:
        """Each evaluation's time lands in the step after it (a loop that logs, then evaluates)."""
        after = self.train["step"].isin(self.evals["step"] + 1)
        self.train.loc[after, "step_time_sec"] = self.train.loc[after, "step_time_sec"] + seconds
        return self

    def plant_save_after_its_step(self) -> RunBuilder:
        """Each checkpoint save's time lands in the step after it (a loop that logs, then saves)."""
        saved = self.train["step"] % self.checkpoint_interval == 0
        after = saved.shift(1, fill_value=False)
        save_times = self.train.loc[saved, "step_time_sec"].to_numpy()
        self.train.loc[after, "step_time_sec"] = save_times[: after.sum()]
        self.train.loc[saved, "step_time_sec"] = 0.12
        return self

    def plant_interval_mean_logging(self, interval: int, declared: bool = True) -> RunBuilder:
        """Log every `interval`-th step only, its step time the mean over the steps since the previous
        logged row (Megatron's "elapsed time per iteration"); `declared`: the config says so."""
        window = (self.train["step"] - 1) // interval
        self.train["step_time_sec"] = self.train.groupby(window)["step_time_sec"].transform("mean")
        self.train = self.train[self.train["step"] % interval == 0].reset_index(drop=True)
        self.config_overrides["step_time_is_interval_mean"] = declared
        return self

    def plant_sparse_logging(self, interval: int) -> RunBuilder:
        """Log every `interval`-th step only, each row that step's own values (logging_steps > 1)."""
        self.train = self.train[self.train["step"] % interval == 0].reset_index(drop=True)
        return self

    def plant_initial_loss(self, losses: list[float]) -> RunBuilder:
        """The first logged losses are `losses` (e.g. mis-scaled initial logits)."""
        self.train.loc[self.train.index[: len(losses)], "loss"] = losses
        return self

    def plant_uniform_guess_start(
        self, classes: int, val_end: float, accuracy_end: float, accuracy_start: float | None = None
    ) -> RunBuilder:
        """A `classes`-way classifier whose config names no count: its first evaluation (step 0)
        scores the loss of a uniform guess (0.3% above ln(classes)) and, unless `accuracy_start`
        says otherwise, its accuracy (1.05 / classes); validation then falls linearly to `val_end`
        (training to 0.98 x it) and the accuracy moves linearly to `accuracy_end`."""
        start = math.log(classes) * 1.003
        self.plant_loss_curve(start, val_end * 0.98, start, val_end)
        first = 1.05 / classes if accuracy_start is None else accuracy_start
        self.evals["val_accuracy"] = np.linspace(first, accuracy_end, len(self.evals))
        return self

    def plant_flat_loss(self, level: float = 5.5) -> RunBuilder:
        """Training and validation loss flat at `level`: nothing is learned."""
        self.train["loss"] = level * np.exp(self.rng.normal(0, self.noise, len(self.train)))
        self.evals["val_loss"] = level * np.exp(self.rng.normal(0, 0.002, len(self.evals)))
        self.evals["val_accuracy"] = accuracy_of(self.evals["val_loss"])
        return self

    def plant_frozen_loss(self, from_step: int, level: float) -> RunBuilder:
        """The training loss falls as usual, then from `from_step` on is logged as one value,
        `level`, on every step (a dead network, parameters that stopped moving)."""
        self.train.loc[self.train["step"] >= from_step, "loss"] = level
        return self

    def plant_stopped_learning(self, from_step: int, digits: int | None = None) -> RunBuilder:
        """Every evaluation after `from_step` repeats its value (weights that stopped changing: an LR
        cut to zero, an optimizer no longer stepping); `digits`: those values printed to that many
        significant digits, as a log that rounds them (the training loss keeps its batch noise)."""
        at = self.evals["step"] >= from_step
        value = float(self.evals.loc[self.evals["step"] == from_step, "val_loss"].iloc[0])
        self.evals.loc[at, "val_loss"] = float(f"{value:.{digits}g}") if digits else value
        return self

    def plant_stalled_learning(self, level: float = 3.12, first_eval: int = 20) -> RunBuilder:
        """The loss falls to `level` within the first steps, then neither loss moves (the batch noise
        alone, validation within 0.1%): evaluations from `first_eval` on (none at the untrained start),
        so the fall happened before the first of them (a character model stuck at its unigram level)."""
        steps = self.train["step"].to_numpy()
        curve = level + 2.6 * np.exp(-steps / 3.0)
        self.train["loss"] = curve * np.exp(self.rng.normal(0, self.noise, len(steps)))
        self.evals = self.evals[self.evals["step"] >= first_eval].reset_index(drop=True)
        eval_steps = self.evals["step"].to_numpy()
        self.evals["val_loss"] = (level + 0.01) * np.exp(self.rng.normal(0, 0.0005, len(eval_steps)))
        self.evals["val_accuracy"] = accuracy_of(self.evals["val_loss"])
        return self

    def plant_signed_loss(self, start: float, end: float) -> RunBuilder:
        """A loss with negative values (a density's negative log-likelihood) moving from `start`
        to `end` (an exponential approach, additive noise of 0.5% of |start|); validation likewise."""
        for frame, column in ((self.train, "loss"), (self.evals, "val_loss")):
            steps = frame["step"].to_numpy()
            curve = end + (start - end) * np.exp(-steps / 30.0)
            frame[column] = curve + self.rng.normal(0, 0.005 * abs(start), len(steps))
        return self

    def plant_shallow_loss(self, drop: float = 0.05) -> RunBuilder:
        """Training and validation loss fall by `drop` (relative) and flatten."""
        steps = self.train["step"].to_numpy()
        curve = 5.5 * (1 - drop * (1 - np.exp(-steps / 15.0)))
        self.train["loss"] = curve * np.exp(self.rng.normal(0, self.noise / 4, len(steps)))
        eval_steps = self.evals["step"].to_numpy()
        val = 5.55 * (1 - drop * (1 - np.exp(-eval_steps / 15.0)))
        self.evals["val_loss"] = val * np.exp(self.rng.normal(0, 0.002, len(eval_steps)))
        return self

    def plant_loss_curve(
        self, start: float, end: float, val_start: float, val_end: float, rise: float = 0.0
    ) -> RunBuilder:
        """Training loss from `start` to `end` (an exponential approach, with the builder's noise),
        optionally rising by `rise` (relative) through the warmup first; validation from `val_start`
        (the evaluation at step 0) to `val_end`, linearly."""
        steps = self.train["step"].to_numpy().astype(float)
        approach = 1 - np.exp(-steps / (self.total_steps / 5))
        bump = rise * np.sin(np.pi * np.clip(steps / (2 * self.warmup_steps), 0, 1)) ** 2
        bump[steps > self.warmup_steps * 2] = 0
        curve = (start + (end - start) * approach) * (1 + bump)
        self.train["loss"] = curve * np.exp(self.rng.normal(0, self.noise / 2, len(steps)))
        eval_steps = self.evals["step"].to_numpy().astype(float)
        val = val_start + (val_end - val_start) * eval_steps / self.total_steps
        self.evals["val_loss"] = val * np.exp(self.rng.normal(0, 0.002, len(eval_steps)))
        return self

    def plant_resume_defect(self, crash_after: int, resume_from: int, *defects: str) -> RunBuilder:
        """Crash and resume (plant_restart), then one thing the resume did not restore, in the new
        attempt's rows: `lr_reset` (the scheduler restarts its decay at the peak), `warmup_restarted`
        (the warmup runs again from the resume), `data_replayed` (the data loader starts over from the
        run's first batch), `data_skipped` (the loader is 16 steps, two shard visits, ahead) or
        `loss_jump` (the optimizer state is lost: the loss jumps 40% and recovers over a few steps)."""
        original = self.train.set_index("step")
        self.plant_restart(crash_after, resume_from)
        after = self.train.index[len(self.train) - (self.total_steps - resume_from) :]
        steps = self.train.loc[after, "step"].to_numpy()
        since = steps - resume_from
        for defect in defects:
            self._plant_resume_defect(after, steps, since, original, defect)
        return self

    def _plant_resume_defect(
        self, after: pd.Index, steps: np.ndarray, since: np.ndarray, original: pd.DataFrame, defect: str
    ) -> None:
        if defect == "lr_reset":
            self.train.loc[after, "learning_rate"] = [self.schedule(self.warmup_steps + k) for k in since]
        elif defect == "warmup_restarted":
            self.train.loc[after, "learning_rate"] = [
                self.schedule(k) if k <= self.warmup_steps else self.schedule(s)
                for k, s in zip(since, steps, strict=True)
            ]
        elif defect == "data_replayed":
            self.train.loc[after, "shard_id"] = original.loc[since, "shard_id"].to_numpy()
        elif defect == "data_skipped":
            ahead = np.minimum(steps + 16, self.total_steps)
            self.train.loc[after, "shard_id"] = original.loc[ahead, "shard_id"].to_numpy()
        elif defect == "loss_jump":
            self.train.loc[after, "loss"] = self.train.loc[after, "loss"] * (
                1 + 0.4 * np.exp(-(since - 1) / 6.0)
            )
        else:
            raise ValueError(f"unknown resume defect {defect!r}")

    def plant_percent_accuracy(self, steps: list[int]) -> RunBuilder:
        mask = self.evals["step"].isin(steps)
        self.evals.loc[mask, "val_accuracy"] = self.evals.loc[mask, "val_accuracy"] * 100
        return self

    def plant_placeholder_val_losses(self, until: int) -> RunBuilder:
        """Validation losses logged as exactly 0 up to `until` (a logger writing 0 when no
        validation ran: YOLO's results.csv with val=False)."""
        self.evals.loc[self.evals["step"] <= until, "val_loss"] = 0.0
        return self

    def plant_val_losses_towards_zero(self) -> RunBuilder:
        """A validation loss that really approaches 0 (an easy regression target), logged to 4
        decimals: it passes through 0.0012, 0.0003 ... before its last evaluations round to 0."""
        n = len(self.evals)
        self.evals["val_loss"] = np.round(0.05 * np.power(0.5, np.arange(n)), 4)
        return self

    def plant_duplicate_row(self, step: int) -> RunBuilder:
        row = self.train[self.train["step"] == step]
        position = row.index[0] + 1
        self.train = pd.concat(
            [self.train.iloc[:position], row, self.train.iloc[position:]], ignore_index=True
        )
        return self

    def plant_swap(self, step: int) -> RunBuilder:
        i = self.train.index[self.train["step"] == step][0]
        rows = self.train.to_dict("records")
        rows[i], rows[i + 1] = rows[i + 1], rows[i]
        self.train = pd.DataFrame(rows)
        return self

    def plant_config(self, **overrides: object) -> RunBuilder:
        self.config_overrides.update(overrides)
        return self

    # --- output ----------------------------------------------------------------
    def config(self) -> dict:
        document = {
            "run_name": "fixture",
            "lr_schedule": {
                "type": "warmup_cosine",
                "peak_lr": self.peak_lr,
                "min_lr": self.min_lr,
                "warmup_steps": self.warmup_steps,
                "decay_steps": self.total_steps,
            },
            "grad_clip_norm": self.grad_clip_norm,
            "batch_size": self.batch_size,
            "total_steps": self.total_steps,
            "eval_interval": self.eval_interval,
            "checkpoint_interval": self.checkpoint_interval,
            "data": {"n_shards": len(self.shards)},
        }
        for key, value in self.config_overrides.items():
            if key in document["lr_schedule"]:
                document["lr_schedule"][key] = value
            else:
                document[key] = value
        return document

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        self.train.to_csv(run_file(folder, "train", self.prefix), index=False, float_format="%.6g")
        self.evals.to_csv(run_file(folder, "eval", self.prefix), index=False, float_format="%.6g")
        self.shards.to_csv(run_file(folder, "shards", self.prefix), index=False)
        self.events.to_csv(run_file(folder, "events", self.prefix), index=False)
        run_file(folder, "config", self.prefix).write_text(json.dumps(self.config(), indent=2))
        return folder
