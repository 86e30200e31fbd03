"""llm.c logs: ``main.log`` (written with ``-o DIR``) and the stdout of llm.c, ``train_gpt2.py``
and build-nanogpt, with the ``| Parameter | Value |`` table llm.c prints at start (the config).
See ``text_logs`` for what is read and what cannot be known."""

from __future__ import annotations

import re

from run_diagnosis.importers.text_log_core import (
    NUM,
    LineType,
    LogConfig,
    ParsedLog,
    Shape,
    any_order,
    make_line,
    missing_notes,
    no_config,
    parse_integer,
    parse_number,
    schedule_type,
    unit_suffix,
)


def llmc_table_config(parsed: ParsedLog) -> LogConfig:
    """llm.c's start-up ``| Parameter | Value |`` table (train_gpt2.cu / llama3 variants)."""
    table = {re.sub(r"\s+", " ", k.lower()): v for k, v in parsed.settings.items()}
    result = LogConfig()
    if not table:
        return no_config(parsed)
    peak = parse_number(table.get("learning rate (lr)"))
    warmup = parse_integer(table.get("warmup iterations"))
    total = parse_integer(table.get("train_num_batches"))
    if total is None:
        total = parse_integer(table.get("max_steps"))
        total = total if total is not None and total > 0 else None
    frac = parse_number(table.get("final lr fraction"))
    style = table.get("lr scheduler")
    kind = schedule_type(style, warmup, result.notes)
    result.schedule = {
        "type": kind,
        "peak_lr": peak,
        "min_lr": peak * frac if peak is not None and frac is not None else None,
        "warmup_steps": warmup,
        "decay_steps": total,
        "source_type": style,
    }
    if style is None:
        result.notes.append("llm.c table has no 'LR scheduler' row (older llm.c); schedule type unknown")
    if kind in ("constant", "constant_with_warmup"):
        result.schedule["min_lr"] = peak
    elif frac is not None:
        result.notes.append("min_lr = learning rate (LR) x final LR fraction from the llm.c table")
    tokens = parse_integer(table.get("total batch size"))
    seq = parse_integer(table.get("sequence length t"))
    checkpoint_every = parse_integer(table.get("checkpoint_every"))
    result.config = {
        "total_steps": total,
        "grad_clip_norm": None,
        "batch_size": tokens // seq if tokens and seq else None,
        "eval_interval": parse_integer(table.get("val_loss_every")),
        "checkpoint_interval": checkpoint_every if checkpoint_every else None,
        "data_parallel_workers": parse_integer(table.get("num_processes")),
        "weight_decay": parse_number(table.get("weight decay")),
        "seq_length": seq,
        "batch_size_tokens": tokens,
        # train_gpt2.cu logs grad_norm and then updates with grad_scale = grad_clip / grad_norm
        # when grad_norm > grad_clip (grad_clip = 1.0 in the code): the logged norm is before clipping
        "grad_norm_measured": "before_clipping",
    }
    result.notes.append(
        "grad_clip_norm: llm.c clips in code but its log table does not print the threshold; left unknown"
    )
    if tokens and seq:
        result.notes.append(f"batch_size = total batch size {tokens} tokens / sequence length {seq}")
    if checkpoint_every == 0:
        result.notes.append("checkpoint_every is 0 in the llm.c table: checkpointing was off")
    missing_notes(result, "the llm.c parameter table")
    return result


LLMC_STEP = any_order(
    r"^\s*step\s+(?P<step>\d+)\s*(?:/\s*(?P<total_steps>\d+)\s*)?(?=\|)"
    rf"(?=.*?\|\s*(?:train\s+)?loss:?\s+{NUM})",
    rf"\|\s*(?:train\s+)?loss:?\s+(?P<loss>{NUM}){unit_suffix('loss')}",
    rf"\|\s*norm:?\s+(?P<grad_norm>{NUM})",
    rf"\|\s*lr:?\s+(?P<learning_rate>{NUM})",
    # `1234.5 ms`, `dt 1234.5ms` (llm.c), `dt: 1234.5ms` / `elapsed_time: dt=1234.5ms` (build-nanogpt)
    rf"\|\s*\(?\s*(?:elapsed_time:\s*)?(?:dt[:=]?\s*)?(?P<step_time_ms>{NUM})\s*ms\b",
)


LLMC_MAIN_LOG = Shape(
    name="llmc_main_log",
    description="llm.c main.log (written with -o DIR)",
    example="s:<step> trl:<loss> lr:<lr> norm:<norm> / s:<step> tel:<val loss>",
    line_types=(
        make_line(
            "llmc_train",
            "train",
            rf"^s:(?P<step>\d+) trl:(?P<loss>{NUM})"
            rf"(?: lr:(?P<learning_rate>{NUM}))?(?: norm:(?P<grad_norm>{NUM}))?\s*$",
            needle="trl:",
            evidence=True,
        ),
        make_line(
            "llmc_val",
            "eval",
            rf"^s:(?P<step>\d+) tel:(?P<val_loss>{NUM})\s*$",
            needle="tel:",
            evidence=True,
        ),
        make_line(
            "hellaswag",
            "side_metric",
            rf"^s:(?P<step>\d+) eval:(?P<metric>{NUM})\s*$",
            needle="eval:",
            evidence=True,
        ),
    ),
    config=no_config,
    notes=(
        "llm.c main.log steps are 0-based: 's:0 trl' is the first optimizer step and 's:N tel' is the "
        "validation loss after N steps",
        "llm.c main.log prints lr with 6 decimals: learning rates below 5e-7 read as 0",
        "llm.c main.log has no step time (stdout has it as '... ms')",
    ),
)


LLMC_STDOUT = Shape(
    name="llmc_stdout",
    description="llm.c / train_gpt2.py / build-nanogpt stdout",
    example="step    1/19560 | train loss 11.01 | norm 15.4 | lr 8.57e-07 | 1234.56 ms",
    line_types=(
        LineType("llmc_step", "train", LLMC_STEP, needle="step", evidence=True),
        make_line(
            "llmc_cpu_step",
            "train",
            rf"^step (?P<step>\d+): train loss (?P<loss>{NUM}) \(took (?P<step_time_ms>{NUM}) ms\)",
            needle="took",
            evidence=True,
        ),
        make_line(
            "llmc_val",
            "eval",
            rf"^\s*(?:val loss|validation loss:)\s+(?P<val_loss>{NUM}){unit_suffix('val_loss')}\s*$",
            evidence=True,
        ),
        make_line(
            "bn_checkpoint_loaded",
            "event",
            r"^Loaded checkpoint from (?P<path>[^,\s]+),.*?\bstep (?P<resumed>\d+)",
            event="resuming from step {resumed}: loaded checkpoint {path}",
        ),
        make_line(
            "hellaswag",
            "side_metric",
            rf"^HellaSwag(?: accuracy)?:\s*\d+\s*/\s*\d+\s*=\s*(?P<metric>{NUM})",
            needle="HellaSwag",
        ),
        make_line(
            "llmc_table",
            "setting",
            r"^\|\s*(?P<key>[^|]*?[A-Za-z][^|]*?)\s*\|\s*(?P<value>[^|]*?)\s*\|\s*$",
        ),
        make_line(
            "llmc_skip",
            "event",
            rf"^skipping update due to (?P<what>loss|grad) z-score of (?P<z>{NUM})",
            event="skipped update: {what} z-score {z} above the skip threshold",
            next_step=True,
        ),
        make_line(
            "llmc_checkpoint",
            "event",
            r"^Writing (?:model|state) to (?P<path>\S+)",
            event="checkpoint saved: {path}",
        ),
    ),
    config=llmc_table_config,
    notes=(
        "llm.c stdout numbers steps from 1 ('step 1/N' is the first optimizer step); 'val loss' lines "
        "carry no step and get the number of steps completed before them",
    ),
)
