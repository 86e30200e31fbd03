"""nanoGPT logs: ``train.py`` stdout (``iter N: loss ...``, ``Overriding: key = value``) and
build-nanogpt's ``log.txt``. See ``text_logs`` for what is read and what cannot be known."""

from __future__ import annotations

from run_diagnosis.importers.text_log_core import (
    NUM,
    LogConfig,
    ParsedLog,
    Shape,
    make_line,
    missing_notes,
    no_config,
    parse_flag,
    parse_integer,
    parse_number,
    unit_suffix,
)
from run_diagnosis.importers.units import UNIT_PATTERN


def nanogpt_config(parsed: ParsedLog) -> LogConfig:
    """nanoGPT echoes only overridden settings (config file and ``--key=value``)."""
    settings = parsed.settings
    if not settings:
        return no_config(parsed)
    peak = parse_number(settings.get("learning_rate"))
    warmup = parse_integer(settings.get("warmup_iters"))
    decay_lr = parse_flag(settings.get("decay_lr"))
    micro = parse_integer(settings.get("batch_size"))
    accumulation = parse_integer(settings.get("gradient_accumulation_steps"))
    result = LogConfig()
    result.schedule = {
        "type": "constant" if decay_lr is False else ("warmup_cosine" if decay_lr else None),
        "peak_lr": peak,
        "min_lr": peak if decay_lr is False else parse_number(settings.get("min_lr")),
        "warmup_steps": warmup,
        "decay_steps": parse_integer(settings.get("lr_decay_iters")),
    }
    result.config = {
        "total_steps": parse_integer(settings.get("max_iters")),
        "grad_clip_norm": parse_number(settings.get("grad_clip")),
        "batch_size": micro * accumulation if micro and accumulation else None,
        "eval_interval": parse_integer(settings.get("eval_interval")),
        "weight_decay": parse_number(settings.get("weight_decay")),
        "seq_length": parse_integer(settings.get("block_size")),
    }
    result.notes.append(
        "nanoGPT prints only the settings it overrides; settings left at nanoGPT's train.py defaults are "
        "not in the log and stay unknown"
    )
    if micro and accumulation:
        result.notes.append(f"batch_size = batch_size {micro} x gradient_accumulation_steps {accumulation}")
    missing_notes(result, "the nanoGPT log")
    return result


NANOGPT_STDOUT = Shape(
    name="nanogpt_stdout",
    description="nanoGPT train.py stdout",
    example="iter 100: loss 4.2345, time 35.21ms, mfu 12.3% / step 100: train loss 4.1, val loss 4.2",
    line_types=(
        make_line(
            "nanogpt_iter",
            "train",
            rf"^iter\s+(?P<step>\d+):\s*loss\s+(?P<loss>{NUM}){unit_suffix('loss')}(?:,\s*time\s+(?P<step_time_ms>{NUM})\s*ms)?",
            needle="iter",
            evidence=True,
        ),
        make_line(
            "nanogpt_eval",
            "eval",
            rf"^step\s+(?P<step>\d+):\s*train loss\s+{NUM}(?:\s*{UNIT_PATTERN})?,"
            rf"\s*val loss\s+(?P<val_loss>{NUM})" + unit_suffix("val_loss"),
            needle="val loss",
            evidence=True,
        ),
        make_line("nanogpt_override", "setting", r"^Overriding:\s*(?P<key>\w+)\s*=\s*(?P<value>.+?)\s*$"),
        make_line(
            "nanogpt_config_echo",
            "setting",
            r"^(?P<key>[a-z_][a-z0-9_]*)\s*=\s*(?P<value>[^=#]+?)\s*(?:#.*)?$",
        ),
        make_line(
            "nanogpt_checkpoint",
            "event",
            r"^saving checkpoint to (?P<path>\S+)",
            event="checkpoint saved: {path}",
        ),
        make_line(
            "nanogpt_resume",
            "event",
            r"^Resuming training from (?P<path>\S+)",
            event="resuming from checkpoint: {path}",
        ),
    ),
    config=nanogpt_config,
    notes=(
        "nanoGPT's iter loss is the last micro-batch's loss x gradient_accumulation_steps (an estimate, "
        "not the batch mean); it prints no grad norm or learning rate",
    ),
)


BUILD_NANOGPT_LOG = Shape(
    name="build_nanogpt_log",
    description="build-nanogpt log.txt",
    example="<step> train <loss> / <step> val <loss> / <step> hella <acc>",
    line_types=(
        make_line(
            "bn_train",
            "train",
            rf"^(?P<step>\d+) train (?P<loss>{NUM}){unit_suffix('loss')}\s*$",
            needle="train",
            evidence=True,
        ),
        make_line(
            "bn_val",
            "eval",
            rf"^(?P<step>\d+) val (?P<val_loss>{NUM}){unit_suffix('val_loss')}\s*$",
            needle="val",
            evidence=True,
        ),
        make_line(
            "hellaswag",
            "side_metric",
            rf"^(?P<step>\d+) hella (?P<metric>{NUM})\s*$",
            needle="hella",
            evidence=True,
        ),
    ),
    config=no_config,
    notes=("build-nanogpt log.txt has train and val loss only: no grad norm, learning rate or step time",),
)
