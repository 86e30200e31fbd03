"""Megatron-LM / Megatron-DeepSpeed stdout: ``iteration N/ M | ...`` lines, validation lines and
the ``arguments`` dump, read into the config by ``megatron_config`` (also used for the Megatron CI
golden values). See ``text_logs`` for what is read and what cannot be known."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from run_diagnosis.importers.text_log_core import (
    NUM,
    LineType,
    LogConfig,
    ParsedLog,
    Shape,
    any_order,
    make_line,
    no_config,
    parse_flag,
    parse_integer,
    parse_number,
    schedule_type,
)


def megatron_config(
    args: Mapping[str, Any], source: str, iteration_total: int | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Schedule, config and notes from Megatron arguments (underscore names, text or YAML values).

    ``args`` is the ``arguments`` dump of a Megatron log (every argument, defaults included) or
    the MODEL_ARGS of a CI ``model_config.yaml`` (only what the test sets). Megatron's own rules
    are applied and each derivation is noted: lr_decay_iters defaults to train_iters; warmup from
    lr_warmup_fraction is a fraction of the decay iterations; sample counts are divided by
    global_batch_size; token counts (Megatron-DeepSpeed) by global_batch_size x seq_length.
    """
    notes: list[str] = []

    def stated(key: str) -> Any:
        value = args.get(key)
        return None if isinstance(value, str) and value.strip().lower() in {"none", ""} else value

    batch = parse_integer(stated("global_batch_size"))
    seq = parse_integer(stated("seq_length")) or parse_integer(stated("encoder_seq_length"))
    tokens_per_step = batch * seq if batch and seq else None

    token_based: list[str] = []

    def from_tokens(key: str) -> int | None:
        """A schedule length in tokens has no fixed length in steps: with token dropping or a
        sequence-length curriculum a step consumes fewer tokens than batch x seq_length (the
        real Megatron-DeepSpeed logs reach only ~42% of a warmup that would be 715 steps).
        So it is recorded as unknown, and the schedule checks say they could not run."""
        tokens = parse_number(stated(key))
        if not tokens:
            return None
        token_based.append(key)
        per_step = (
            f" (~{tokens / tokens_per_step:.0f} steps at {tokens_per_step} tokens per step)"
            if tokens_per_step
            else ""
        )
        notes.append(
            f"{key} = {tokens:.0f} tokens{per_step}: Megatron-DeepSpeed schedules by consumed tokens, and "
            "a step's token count varies (token dropping, sequence-length curricula), so the schedule "
            "length in steps is unknown: warmup/decay left empty, the LR schedule check cannot run"
        )
        return None

    def from_samples(key: str) -> int | None:
        samples = parse_number(stated(key))
        if not samples or not batch:
            return None
        notes.append(f"{key} = {samples:.0f} samples / global_batch_size {batch}")
        return int(samples // batch)

    total = parse_integer(stated("train_iters"))
    if total is None:
        total = from_samples("train_samples")
    if total is None and iteration_total is not None:
        total = iteration_total
        notes.append(f"total_steps {iteration_total} taken from the 'iteration N/ M' lines")

    decay = from_tokens("lr_decay_tokens")
    if decay is None:
        decay = parse_integer(stated("lr_decay_iters"))
    if decay is None:
        decay = from_samples("lr_decay_samples")
    if decay is None and total is not None:
        decay = total
        notes.append("lr_decay_iters not set: Megatron decays over train_iters, so decay_steps = total_steps")

    warmup = from_tokens("lr_warmup_tokens")
    if warmup is None and parse_number(stated("lr_warmup_fraction")) is not None:
        fraction = parse_number(stated("lr_warmup_fraction"))
        if decay is not None and fraction is not None:
            warmup = round(fraction * decay)
            notes.append(f"warmup_steps = lr_warmup_fraction {fraction:g} x decay steps {decay}")
    if warmup is None and parse_integer(stated("lr_warmup_iters")):
        warmup = parse_integer(stated("lr_warmup_iters"))
    if warmup is None:
        warmup = from_samples("lr_warmup_samples")
    if warmup is None and (stated("lr_warmup_iters") is not None or stated("lr_warmup_samples") is not None):
        warmup = 0

    if token_based:
        warmup = decay = None
    fp16, bf16 = parse_flag(stated("fp16")), parse_flag(stated("bf16"))
    precision = "fp16" if fp16 else "bf16" if bf16 else ("fp32" if fp16 is False and bf16 is False else None)
    kind = schedule_type(stated("lr_decay_style"), warmup, notes)
    schedule = {
        "type": kind,
        "peak_lr": parse_number(stated("lr")),
        "min_lr": parse_number(stated("min_lr")),
        "warmup_steps": warmup,
        "decay_steps": decay,
        "source_type": stated("lr_decay_style"),
    }
    if kind in ("constant", "constant_with_warmup"):
        notes.append(f"constant schedule: min_lr = peak_lr (Megatron ignores min_lr {schedule['min_lr']})")
        schedule["min_lr"] = schedule["peak_lr"]
    config = {
        "grad_clip_norm": parse_number(stated("clip_grad")),
        "total_steps": total,
        "batch_size": batch,
        "eval_interval": parse_integer(stated("eval_interval")),
        "checkpoint_interval": parse_integer(stated("save_interval")),
        "data_parallel_workers": parse_integer(stated("data_parallel_size")),
        "precision": precision,
        "seq_length": seq,
        "micro_batch_size": parse_integer(stated("micro_batch_size")),
        "weight_decay": parse_number(stated("weight_decay")),
        "seed": parse_integer(stated("seed")),
        "log_interval": parse_integer(stated("log_interval")),
    }
    if config["grad_clip_norm"] == 0:
        notes.append("clip_grad is 0: Megatron does not clip gradients")
    elif config["grad_clip_norm"] is not None:
        # the printed "grad norm" is what the optimizer's clip_grad_norm_fp32 returns
        # (megatron/core/optimizer/clip_grads.py): the total norm computed before the gradients
        # are scaled by max_norm / total_norm, i.e. before clipping
        config["grad_norm_measured"] = "before_clipping"
    if config["checkpoint_interval"] is not None and "save" in args and stated("save") is None:
        notes.append("save_interval is set but no --save folder: no checkpoints were written")
    if batch is not None:
        notes.append("batch_size is global_batch_size (sequences per step)")
    defaults = {
        "lr": "no default (required)",
        "min_lr": "0.0",
        "lr_decay_style": "linear",
        "clip_grad": "1.0",
        "global_batch_size": "micro_batch_size x data-parallel size",
        "eval_interval": "1000",
        "save_interval": "none",
    }
    for key, default in defaults.items():
        if key not in args:
            notes.append(f"{source} does not set {key} (Megatron's default: {default}); left unknown")
    if total is None:
        notes.append(f"{source} states neither train_iters nor train_samples; total_steps unknown")
    return schedule, config, notes


def megatron_log_config(parsed: ParsedLog) -> LogConfig:
    if not parsed.settings:
        result = no_config(parsed)
        result.notes[0] = "megatron: no 'arguments' dump in the log; the run config is unknown"
        if parsed.total_steps:
            result.config["total_steps"] = parsed.total_steps[-1]
            result.notes.append("total_steps taken from the 'iteration N/ M' lines")
    else:
        total = parsed.total_steps[-1] if parsed.total_steps else None
        result = LogConfig(*megatron_config(parsed.settings, "the arguments dump", total))
    result.notes.append("step_time_sec is Megatron's elapsed time per iteration: a log-interval mean")
    return result


MEGATRON_ITERATION = any_order(
    r"\biteration\s+(?P<step>\d+)\s*/\s*(?P<total_steps>\d+)\s*\|",
    rf"elapsed time per iteration \(ms\):\s*(?P<step_time_ms>{NUM})",
    rf"\blearning rate:\s*(?P<learning_rate>{NUM})",
    r"\bglobal batch size:\s*(?P<global_batch_size>\d+)",
    rf"\blm loss:\s*(?P<loss>{NUM})",
    rf"\bloss scale:\s*(?P<loss_scale>{NUM})",
    rf"\bgrad norm:\s*(?P<grad_norm>{NUM})",
    r"number of skipped iterations:\s*(?P<skipped_iterations>\d+)",
    r"number of nan iterations:\s*(?P<nan_iterations>\d+)",
)


MEGATRON = Shape(
    name="megatron",
    description="Megatron-LM / Megatron-DeepSpeed stdout",
    example="iteration N/ M | ... | lm loss: ... | / validation loss at iteration N | lm loss value: ...",
    line_types=(
        LineType("megatron_iteration", "train", MEGATRON_ITERATION, needle="iteration", evidence=True),
        make_line(
            "megatron_validation",
            "eval",
            r"validation loss at iteration\s+(?P<step>\d+)(?!\d)(?! on test)[^|]*\|"
            rf".*?lm loss value:\s*(?P<val_loss>{NUM})",
            needle="validation loss",
            evidence=True,
        ),
        make_line(
            "megatron_validation_end",
            "eval",
            r"validation loss at the end of training for val data\s*\|"
            rf".*?lm loss value:\s*(?P<val_loss>{NUM})",
            needle="end of training",
            evidence=True,
        ),
        make_line(
            "megatron_arguments_header",
            "ignored",
            r"^-+ arguments -+\s*$",
            needle="arguments",
            evidence=True,
        ),
        make_line(
            "megatron_argument",
            "setting",
            r"^  (?P<key>[a-z_][a-z0-9_]*) \.{2,} (?P<value>.*?)\s*$",
            evidence=True,
        ),
        make_line(
            "megatron_checkpoint_saved",
            "event",
            r"saved checkpoint (?:at|from) iteration\s+(?P<step>\d+)",
            needle="saved checkpoint",
            event="checkpoint saved: iteration {step}",
        ),
        make_line(
            "megatron_checkpoint_loaded",
            "event",
            r"load(?:ing|ed) checkpoint from\s+\S+.*?\bat iteration\s+(?P<step>\d+)",
            needle="checkpoint from",
            event="resuming from checkpoint at iteration {step}",
        ),
        make_line(
            "no_checkpoint_deepspeed",
            "event",
            r"Unable to find latest file at",
            needle="Unable to find latest",
            event="no checkpoint to resume from (DeepSpeed: unable to find the 'latest' file)",
        ),
        make_line(
            "no_checkpoint_megatron",
            "event",
            r"could not find the metadata file",
            needle="metadata file",
            event="no checkpoint to resume from (Megatron: could not find the checkpoint metadata file)",
        ),
        make_line(
            "megatron_exit",
            "event",
            rf"exiting program (?:at iteration\s+(?P<step>\d+)|after (?P<minutes>{NUM}) minutes)",
            needle="exiting program",
            event="run stopped by Megatron: exit condition reached (iteration {step})",
        ),
    ),
    config=megatron_log_config,
    # "elapsed time per iteration" is the mean over the iterations since the previous iteration line
    interval_mean_times=True,
    notes=(
        "Megatron iteration lines are averages over the log interval: each train row is the mean lm loss "
        "and mean time per iteration of the iterations since the previous line",
    ),
)
