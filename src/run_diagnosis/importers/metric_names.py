"""What a logged metric name means, read from its words: the one metric-name resolver.

Every importer (wide tables, TensorBoard tags, Hugging Face ``log_history`` keys, console logs)
asks this module what a name such as ``valid/loss``, ``lr-AdamW/pg1`` or
``elapsed time per iteration (ms)`` is, instead of keeping its own list of whole names.

How a name is read
------------------
1. **Tokens.** The name is cut at ``/ _ - . : , | ( ) [ ]`` and spaces, at camelCase
   (``CrossEntropyLoss`` -> cross entropy loss) and between letters and digits (``pg1`` ->
   pg 1), lower-cased; a few two-word compounds are joined back (``learning rate`` -> lr,
   ``cross entropy`` -> ce, ``adam w`` -> adamw, ``l 2`` -> l2, ``top 1`` -> top1).
2. **Word classes.** Each token is looked up in ``WORDS`` (one table, each entry with its
   reason): a *split* word (train, val, test ...), a *quantity* word (loss, acc, lr, norm,
   time ...), a *unit* (ms, bits, ppl, %), an *aggregation* (step, epoch, avg, ema ...), a
   *qualifier* that keeps the series plain (total, global, lm, optim, adamw ...), a
   *component* word that makes it a part of a loss (aux, z, kl, bbox ...), a *part* word
   (layer, weight ...), an *index* word (group, pg, dataloader), or a *known other* metric
   (mfu, throughput, memory, bleu, reward ...). A token not in the table is *unknown*.
3. **Quantity** by precedence over the token set (``_quantity``): throughput and memory first
   (``tokens_per_second`` is not a token count), then loss scale, learning rate, grad norm,
   loss (with perplexity and bits as units of a loss), accuracy, a detector's mAP at IoU 0.5
   (``metrics/mAP50(B)``, ``mAP_0.5``; COCO's 0.5:0.95 or no threshold named is another metric),
   time, tokens, counters, and known other metrics. No quantity: not understood.
4. **Field** from quantity x split (``_field``): a loss of the train split (or none named) is
   ``loss``, of the validation split ``val_loss``, of the test split ``test_loss``; likewise
   accuracies; a detector's mAP50 of the validation split or of none named (YOLO's results.csv
   names none) is ``val_map50``. Learning rate, grad norm, step time and token counts are
   training fields: named with an evaluation split they are known but not used
   (``eval_runtime``).
5. **Rank** (``Meaning.rank``): 0 the plain series of its field (``primary``), 1 a variant that
   stands in when no plain series is logged (an epoch mean of a per-step series, a loss logged
   in bits or as perplexity, a smoothed series, a parameter group, a name with an unknown word),
   2 a component or a different series that never stands in for the field (``loss_aux``,
   ``z_loss``, top-5 accuracy, one layer's grad norm, a series plotted against samples).

6. **Evaluation sets** (``Meaning.label``): an evaluation metric can name the set it was
   computed on. The Hugging Face Trainer, given a dict of eval datasets, logs
   ``eval_<set name>_loss`` for each (its ``metric_key_prefix`` is ``eval_<name>``); Lightning,
   given several validation dataloaders, appends ``/dataloader_idx_<i>``. So, in a name of the
   validation or test split, the words between the split word and the quantity word that are
   not in ``WORDS`` (a set's name: ``squad``, ``g0``: a letter glued to a number is a label,
   not a GAN role) and a dataloader index are the set's label; such a name is a variant (rank
   1) with the label's number as its index. ``family`` is the name with the label as ``*``.

``assign`` picks, per field, the best-ranked candidate (then fewest words, then lowest group
index); two candidates equal on all of these are an ambiguity, reported in the notes, unless
exactly one of them says it is the sum (``total_loss`` beside ``loss_ce``: detectron2, mmdet). A loss
logged only as the task's terms of its sum (``Meaning.term``: components named by a term word
such as box, cls, dfl, recon, and by no auxiliary word such as aux or z; YOLO's results.csv has
no total) is read from its first
logged term, said in the notes: the terms share the run's course, and the first is the one a
reader of the file compares first; beside two or more such terms, a loss named by a word the
table does not know (``Meaning.guessed``: ``dehaze_loss``, a research head's extra term) is one
more term, not the total. When the
best candidate of an evaluation field is labelled and other candidates of the same family and
rank name other sets, the field is fed by several evaluation sets (``Assignment.sets``, in
index order); ``aliases.evaluation_sets`` turns them into one series (their mean when all are
logged at the same steps, else the first set) and says which in the notes. User overrides
(``--map``, the alias file ``RUN_DIAGNOSIS_ALIASES``) win over the resolver.

To add a word: put it in ``WORDS`` with its class and a reason grounded in where it is logged,
and add the name that needs it to ``corpus/metric_names.csv`` (see docs/metric-names.md).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

FIELDS = (
    "step",
    "epoch",
    "loss",
    "val_loss",
    "test_loss",
    "train_accuracy",
    "val_accuracy",
    "test_accuracy",
    "val_map50",
    "val_auc",
    "learning_rate",
    "grad_norm",
    "step_time_sec",
    "elapsed_sec",
    "timestamp_sec",
    "tokens",
    "shard_id",
)

PLAIN, VARIANT, COMPONENT = 0, 1, 2
NOT_UNDERSTOOD = "not understood: "  # the start of the one grouped note (the report looks for it)


@dataclass(frozen=True)
class Meaning:
    """What one logged name means (see the module docstring for how it is read)."""

    name: str  # the name as logged
    field: str | None  # one of FIELDS; None: not a metric this tool uses (or not understood)
    split: str | None  # "train" | "validation" | "test" | None
    quantity: str | None  # loss, accuracy, perplexity, learning_rate, grad_norm, step_time, elapsed,
    # timestamp, tokens, counter, loss_scale, other
    unit: str | None  # as logged: nats, bits, perplexity, percent, ms, s, or None
    aggregation: str | None  # "step" | "epoch" | "interval" | None (unknown)
    primary: bool  # the plain series of its field, not a component or a variant
    understood: bool  # False: a metric-looking name it cannot place
    why: str  # the tokens that decided, for notes
    rank: int = PLAIN  # 0 plain, 1 variant that stands in, 2 component that never stands in
    index: int = 0  # a parameter-group / dataloader index (group 0 before group 1)
    words: int = 0  # meaningful tokens, fewer first among equal ranks ("loss" before "train/loss")
    label: str | None = None  # the evaluation set an evaluation metric names ("g0" in eval_g0_loss)
    family: str = ""  # the name's words with the set label as "*": several sets share it
    term: bool = (
        False  # a component only as one of the task's terms of a loss (box_loss, recon_loss): see assign
    )
    guessed: bool = False  # its rank rests on a word the table does not know (a qualifier, a set label)
    # the loss functions that name it when no loss word does ('mse', 'Train-SmoothL1'): see assign
    loss_functions: tuple[str, ...] = ()


# --------------------------------------------------------------------------- the word table

# class names
SPLIT, QUANTITY, UNIT, AGG, QUALIFIER, COMPONENT_WORD, PART, INDEX, OTHER, ROLE, VS, SUMMARY = (
    "split",
    "quantity",
    "unit",
    "aggregation",
    "qualifier",
    "component",
    "part",
    "index",
    "other",
    "role",
    "vs",
    "summary",
)


@dataclass(frozen=True)
class Word:
    kind: str
    value: str
    reason: str


def _table(rows: list[tuple[str, str, str, str]]) -> dict[str, Word]:
    """spelling -> Word from rows (class, value, reason, space-separated spellings); a spelling
    in two rows is a mistake in the table."""
    table: dict[str, Word] = {}
    for kind, value, reason, spellings in rows:
        for spelling in spellings.split():
            if spelling in table:
                raise ValueError(f"metric-name word {spelling!r} is in two rows of WORDS")
            table[spelling] = Word(kind, value, reason)
    return table


# Each row: class, value, why (where such names come from), the spellings (one token each).
WORDS: dict[str, Word] = _table(
    [
        (
            SPLIT,
            "train",
            "the training split",
            "train training trn tr"
            # the same words in the languages logs are most often written in besides English (Russian,
            # Spanish, Portuguese, French, Italian, German, Chinese, Japanese), here and in the rows below
            " обучение трен тренировка entrenamiento treino treinamento entraînement apprentissage"
            " addestramento 训练 訓練 学習",
        ),
        (
            SPLIT,
            "validation",
            "held-out data evaluated during training (Lightning val/valid, HF eval, Megatron validation)",
            "val valid validation validate dev eval evaluation evaluate heldout"
            " валидация вал валидации validación validação validazione 验证 検証",
        ),
        (
            SPLIT,
            "test",
            "the test split, evaluated after training (HF's predict phase runs on it)",
            "test testing predict prediction тест prueba teste 测试 テスト",
        ),
        (
            QUANTITY,
            "loss",
            "a training objective (cross-entropy and its spellings; 'cost' as TF1 and PaddlePaddle print it)",
            "loss losses nll ce xent crossentropy objective cost"
            " потеря потери лосс pérdida perte verlust perda perdita 损失 損失 ロス",
        ),
        (
            QUANTITY,
            "perplexity",
            "exp of a per-token loss",
            "ppl perplexity",
        ),
        (
            QUANTITY,
            "bits",
            "a loss in bits (per character, byte, token, dimension)",
            "bpc bpb bpt bpd",
        ),
        (
            QUANTITY,
            "accuracy",
            "share of correct predictions",
            "acc accuracy accuracies top1 correct"
            " точность exactitud genauigkeit acurácia accuratezza 准确率 正确率 精度",
        ),
        (
            QUANTITY,
            "lr",
            "learning rate (also 'learning rate', 'learning-rate')",
            "lr lrs",
        ),
        (
            QUANTITY,
            "grad",
            "gradient statistics; with a norm word: the grad norm",
            "grad grads gradient gradients",
        ),
        (
            QUANTITY,
            "gnorm",
            "fairseq's and others' name for the total grad norm",
            "gnorm gradnorm",
        ),
        (
            QUANTITY,
            "norm",
            "a norm; alone it is the grad norm (nanoGPT, llm.c print 'norm')",
            "norm l2",
        ),
        (
            QUANTITY,
            "time",
            "a duration",
            "time timing duration latency",
        ),
        (
            QUANTITY,
            "dt",
            "seconds or ms per step as nanoGPT prints it",
            "dt",
        ),
        (
            QUANTITY,
            "elapsed",
            "time since the run started",
            "elapsed runtime wall walltime uptime wallclock",
        ),
        (
            QUANTITY,
            "timestamp",
            "a clock time (W&B _timestamp)",
            "timestamp time_stamp",
        ),
        (
            QUANTITY,
            "tokens",
            "a count of tokens processed",
            "tokens token tok toks ntokens",
        ),
        (
            QUANTITY,
            "step",
            "the optimizer step counter",
            "step steps iter iters iteration iterations it i update updates batch"
            " шаг итерация итер paso iteración étape itération schritt passo iteração iterazione"
            " 步 步数 迭代 ステップ",
        ),
        (
            QUANTITY,
            "epoch",
            "the epoch counter (or, after another quantity, a per-epoch aggregate); 'pass' as PaddlePaddle "
            "counts them",
            "epoch epochs ep pass эпоха época époque epoche epoca 轮 轮次 エポック",
        ),
        (
            QUANTITY,
            "shard",
            "which data shard a step read",
            "shard",
        ),
        (
            QUANTITY,
            "scale",
            "with loss/grad: the mixed-precision loss scale",
            "scale scaler",
        ),
        (
            UNIT,
            "ms",
            "milliseconds",
            "ms msec millis",
        ),
        (
            UNIT,
            "s",
            "seconds",
            "s sec secs second seconds",
        ),
        (
            UNIT,
            "min",
            "minutes (an elapsed clock kept in minutes: elapsed_minutes)",
            "minutes minute mins",
        ),
        (
            UNIT,
            "h",
            "hours (an elapsed clock kept in hours: elapsed_hours, train_hours)",
            "hours hour hrs hr",
        ),
        (
            UNIT,
            "bits",
            "a loss in bits: x ln 2 to nats",
            "bits bit",
        ),
        (
            UNIT,
            "nats",
            "a loss in nats (the canonical unit)",
            "nats nat",
        ),
        (
            UNIT,
            "percent",
            "a share in percent",
            "% pct percent",
        ),
        (
            AGG,
            "interval",
            "a mean over the logging interval",
            "avg mean average averaged",
        ),
        (
            AGG,
            "smoothed",
            "a smoothed copy of a series (prefer the raw one)",
            "running smooth smoothed ema moving",
        ),
        (
            QUALIFIER,
            "plain",
            "namespace or qualifier that does not change what is measured",
            "total overall combined global all sum main model lm language modeling per metrics metric "
            "optim optimizer opt trainer info stats perf scalar scalars charts summary log logs "
            "current cur curr num n seen consumed processed input mse mae ctc mlm clm label smoothing "
            "unscaled raw base adam adamw sgd lamb lion adafactor adagrad rmsprop muon decoupled "
            "decoupledadamw scheduler sched pytorch torch lightning hf wandb mlflow",
        ),
        (
            COMPONENT_WORD,
            "component",
            "an auxiliary term added to the task's loss (regulariser, router balance, distillation): "
            "never the loss",
            "aux auxiliary z kl kld reg regularization regularizer l1 distill distillation kd contrastive "
            "commitment vq codebook adv adversarial gp penalty moe balance router load vlb simple nsp sop "
            "policy value vf pg weighted unweighted ctr clip clipped",
        ),
        (
            COMPONENT_WORD,
            "term",
            "one of the task's own terms whose sum is the loss (detection and segmentation heads, "
            "reconstruction): read when no total is logged",
            "bbox box cls rpn mask obj objectness giou iou dfl dice centerness seg recon reconstruction rec "
            "perceptual",
        ),
        (
            COMPONENT_WORD,
            "transform",
            "a transform of the quantity (squared, root): a different series, not the quantity",
            "square squared sq sqr sqrt root",
        ),
        (
            COMPONENT_WORD,
            "preference",
            "DPO/RLHF: the chosen or rejected response's value",
            "chosen rejected",
        ),
        (
            COMPONENT_WORD,
            "topk",
            "top-k accuracy for k > 1: an easier, different accuracy",
            "top5 top3 top10",
        ),
        (
            ROLE,
            "critic",
            "a GAN's discriminator/critic loss: shows whether the GAN learns",
            "d disc discriminator critic",
        ),
        (
            ROLE,
            "generator",
            "a GAN's generator loss: a component, the critic's shows learning",
            "g gen generator",
        ),
        (
            PART,
            "part",
            "one layer, block, head or parameter tensor: not the whole model's value",
            "layer layers block blocks head heads weight weights bias attn attention mlp ffn embed "
            "embedding embeddings wte wpe encoder decoder h module conv fc proj rank gpu worker "
            "device max min std var median p50 p90 p99 hist histogram first last before after",
        ),
        (
            VS,
            "vs",
            "Megatron's 'lm loss vs samples': the same series against samples",
            "vs versus",
        ),
        (
            SUMMARY,
            "summary",
            "one value for the run (best so far, final): not the series of its field",
            "best final",
        ),
        (
            INDEX,
            "index",
            "a parameter group or dataloader index",
            "group groups param_group dataloader idx dl",
        ),
        (
            OTHER,
            "other",
            "a known metric that is not loss, accuracy, LR, grad norm, step time or tokens",
            "mfu hfu throughput fps tps wps ups sps tflops flops flop memory mem gib gb mib mb bytes energy "
            "approx clipfrac explained variance hp hparam hparams flos "
            "allocated reserved util utilization power temperature temp bleu rouge rouge1 rouge2 "
            "rougel rougelsum meteor f1 precision recall auc auroc roc map miou wer cer psnr ssim "
            "lpips fid mcc pearson spearman spearmanr exact em error err errors reward rewards rew return "
            "returns margin margins logps logits advantage advantages score scores momentum beta "
            "beta1 beta2 wd decay coef coeff lambda samples sample examples images sequences bsz wpb "
            "size len length rmse param params parameter parameters zeros nan nans inf overflow "
            "skipped fraction ratio rate count entropy cpu disk network free used done progress "
            "percentage eta remaining timesteps frames episode episodes activation activations act "
            "data forward fwd backward bwd comm io save checkpoint ckpt warmup",
        ),
    ]
)

# two adjacent tokens read as one word
COMPOUNDS: dict[tuple[str, str], str] = {
    ("learning", "rate"): "lr",
    ("learning", "rates"): "lr",
    ("cross", "entropy"): "ce",
    # mean average precision written mAP ('metrics/mAP50(B)', 'bbox_mAP_50'): camelCase cuts it in two
    ("m", "ap"): "map",
    ("adam", "w"): "adamw",
    ("l", "2"): "l2",
    ("l", "1"): "l1",
    ("smooth", "l1"): "smoothl1",
    ("top", "1"): "top1",
    ("top", "3"): "top3",
    ("top", "5"): "top5",
    ("gi", "b"): "gib",
    ("mi", "b"): "mib",
    ("time", "stamp"): "timestamp",
    ("wall", "clock"): "wallclock",
    ("param", "group"): "param_group",
    ("max", "memory"): "memory",
}

_CAPS_PLURAL = re.compile(r"([A-Z]{2,})s(?![a-z])")
# a word holding a letter outside ASCII (a team's own language: 'Эпоха', 'pérdida', '损失') is one
# token, tried before the ASCII camel-case splits so that 'época' is not cut at its accent
_TOKEN = re.compile(r"%|[^\W\d_]*[^\x00-\x7f\W\d_][^\W\d_]*|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# suffixes that make a counter a per-step or per-epoch aggregate of another quantity
_TIME_PARTS = {
    "data",
    "dataloader",
    "forward",
    "fwd",
    "backward",
    "bwd",
    "comm",
    "io",
    "save",
    "checkpoint",
    "ckpt",
}
_PARAM_WORDS = {
    "param",
    "params",
    "parameter",
    "parameters",
    "weight",
    "weights",
    "activation",
    "activations",
    "act",
    "update",
    "updates",
    "embed",
    "embedding",
}
_THROUGHPUT_PER = {"s", "sec", "secs", "second", "seconds"}
# the things a throughput counts: a count noun right before a seconds word is 'per second' with the
# 'per' dropped ('img_sec_core', 'samples_sec', 'tokens_s'); not step or batch ('step_sec' may be
# the seconds a step takes)
_COUNTED = {
    "samples",
    "sample",
    "examples",
    "images",
    "image",
    "img",
    "imgs",
    "tokens",
    "tok",
    "toks",
    "sequences",
    "seqs",
    "frames",
    "words",
    "chars",
    "characters",
}
_TOPK = {"top1", "top3", "top5", "top10"}
_CUMULATIVE = {"total", "overall", "cumulative", "run"}
_PLANNED = {"total", "max"}
_LOSS_WORDS = ("loss", "perplexity", "bits")
# the counter is named in the singular ('step', 'global_step', 'iteration'); a plural with another
# word names a number of steps: a setting or a planned total ('num_train_steps', 'save_steps')
_PLURAL_COUNTS = {"steps", "iters", "iterations", "updates"}
# ... except a running count ('num_updates' is fairseq's counter; 'n_steps' so far)
_RUNNING = {"num", "n", "current"}
# a loss name with a count word counts something (detectron2's FED_LOSS_NUM_CLASSES: 50, a tally of
# NaN losses): a setting or a tally, never a loss value
_COUNT_WORDS = {"num", "number", "count"}
# ... and one whose last word (the head of an English compound) is a coefficient weighs a loss term
# (a config dump's RANGE_LOSS_WEIGHT: 1, a VAE's annealed kl_weight): a setting, never a loss value
# ('weight_loss', an L2 term, and 'weighted_loss' are losses)
_COEFFICIENT_WORDS = {"weight", "weights", "coef", "coeff", "coefficient", "lambda"}


def _unglued(token: str) -> list[str]:
    """A word no row holds that is a split word glued to a quantity word ('trloss', 'valacc',
    'trainloss': a split and what it measures written as one lower-case word) as those two words;
    any other word as it is."""
    if token in WORDS or not token.isalpha():
        return [token]
    for cut in range(len(token) - 2, 1, -1):
        head, tail = WORDS.get(token[:cut]), WORDS.get(token[cut:])
        if head is not None and head.kind == SPLIT and tail is not None and tail.kind == QUANTITY:
            return [token[:cut], token[cut:]]
    return [token]


def tokens(name: str) -> list[str]:
    """The name's words, lower-cased, compounds joined (see the module docstring)."""
    # an all-capitals plural (TFLOPs, GPUs) is one word
    raw = [t.lower() for t in _TOKEN.findall(_CAPS_PLURAL.sub(lambda m: m.group(1) + "S", name))]
    out: list[str] = []
    for token in (word for glued in raw for word in _unglued(glued)):
        out.append(token)
        # a compound may join the word before it ('smooth' + 'l' '1' -> 'smooth' 'l1' -> 'smoothl1')
        while len(out) > 1 and (out[-2], out[-1]) in COMPOUNDS:
            out[-2:] = [COMPOUNDS[(out[-2], out[-1])]]
    return out


def says_loss(name: str) -> bool:
    """True when a word of ``name`` names a loss ('vf_loss', 'nll loss'), not only a term of one
    ('kl' alone: a divergence that PPO and distillation logs also print as a diagnostic)."""
    return any(
        w in WORDS and WORDS[w].kind == QUANTITY and WORDS[w].value in _LOSS_WORDS for w in tokens(name)
    )


# the words a reinforcement-learning loss is named by, before its loss word: PPO/A2C's value function
# (value_loss, vf_loss) and policy (policy_loss, pg_loss), DQN's temporal-difference or Q loss (td_loss,
# q_loss), an actor-critic's actor (actor_loss); a critic's is a GAN's word too (is_adversarial)
_REINFORCEMENT_WORDS = {"value", "vf", "policy", "pg", "td", "q", "qf", "qf1", "qf2", "actor"}
# an actor-critic's two sides: the value estimate's words and the policy's
_VALUE_SIDE = {"critic", "value", "vf"}
_POLICY_SIDE = {"actor", "policy", "pg", "pi"}


# the words of a reinforcement-learning loop's log: its episodes counted, the reward each earned
# (DQN's 'episode,reward,loss', 'Episode 10 | Reward: -483 | Loss: 24.1', a Lightning DQN's
# 'episode reward' and 'total_reward', GRPO's 'reward'); a loss logged beside them under a plain name
# is the agent's value, TD or policy loss
REINFORCEMENT_LOOP_WORDS = frozenset({"episode", "episodes", "reward", "rewards", "rew"})
# the words that make a reward a preference model's score, not an agent's return: DPO's
# rewards/chosen, rewards/rejected, rewards/margins and rewards/accuracies, a reward model's accuracy.
# Its loss is a logistic loss on pairs that starts at ln 2 and must fall like any classifier's
_PREFERENCE_WORDS = frozenset({"chosen", "rejected", "margin", "margins", "accuracies", "accuracy", "acc"})


def reinforcement_loop_names(names: Iterable[str]) -> list[str]:
    """The names, of those a log logged, that count a reinforcement-learning loop's episodes or its
    rewards (REINFORCEMENT_LOOP_WORDS), a preference model's rewards aside (_PREFERENCE_WORDS)."""
    found = []
    for name in names:
        words = set(tokens(name))
        if words & REINFORCEMENT_LOOP_WORDS and not words & _PREFERENCE_WORDS:
            found.append(name)
    return found


def is_reinforcement(name: str) -> bool:
    """True for a reinforcement-learning loss ('value_loss', 'train/policy_gradient_loss', 'td_loss'):
    its targets move with the policy (a value loss grows with the returns it learns to predict), so its
    level says little about whether the agent learns; its return does. The RL word comes before the
    loss word ('loss value' is a loss's value, not a value loss)."""
    words = tokens(name)
    loss_at = [
        i
        for i, w in enumerate(words)
        if w in WORDS and WORDS[w].kind == QUANTITY and WORDS[w].value == "loss"
    ]
    return bool(loss_at) and any(w in _REINFORCEMENT_WORDS for w in words[: loss_at[0]])


def is_adversarial(name: str) -> bool:
    """True for a GAN player's loss (a discriminator/critic's or a generator's): its level follows
    the balance of the two players, not how much one model has learned."""
    return any(w in WORDS and WORDS[w].kind == ROLE for w in tokens(name))


# --------------------------------------------------------------------------- resolving one name


# the IoU thresholds a name gives after 'map': 50 (mAP50), 0 5 (mAP_0.5) or 5 (mAP@.5)
_IOU_HALF = (["50"], ["0", "5"], ["5"])


def _at_iou_half(words: list[str]) -> bool:
    """True when the numbers after 'map' name IoU 0.5 alone (not 0.5:0.95, not 0.75)."""
    after = words[words.index("map") + 1 :]
    return [w for w in after if w.isdigit()] in _IOU_HALF


def _quantity(words: list[str], name: str) -> tuple[str | None, str]:
    """(quantity, the word that decided) by precedence over the token set; None: none found."""
    present = set(words)
    kinds = {w: WORDS[w] for w in words if w in WORDS}
    values = {k.value for k in kinds.values() if k.kind == QUANTITY}
    units = {k.value for k in kinds.values() if k.kind == UNIT}

    def first(*spellings: str) -> str:
        return next((w for w in words if w in spellings), spellings[0])

    after_per = {words[i + 1] for i, w in enumerate(words[:-1]) if w == "per"}
    counted_per = any(a in _COUNTED and b in _THROUGHPUT_PER for a, b in itertools.pairwise(words))
    if after_per & _THROUGHPUT_PER or counted_per or re.search(r"/s(ec)?\b", name.lower()):
        return "throughput", "per second"
    loss_words = [
        w
        for w in words
        if w in kinds
        and kinds[w].kind == QUANTITY
        and kinds[w].value in _LOSS_WORDS
        # 'Time cost', 'cost_time': what an epoch cost in seconds, not a loss
        and not (w == "cost" and values & {"time", "dt", "elapsed", "timestamp"})
    ]
    if ("scale" in values and (loss_words or "grad" in values)) or "scaler" in present:
        return "loss_scale", "loss/grad + scale"
    # the head noun of an English compound is its last word: 'num_loss_tokens' and 'loss_tokens'
    # count tokens (of the loss), they are not a loss ('loss_per_target_token' is a loss: a rate)
    if len(words) > 1 and kinds.get(words[-1]) == WORDS["tokens"] and "per" not in words:
        return "tokens", words[-1]
    if "lr" in values:
        return "learning_rate", first("lr", "lrs")
    norm_words = [w for w in words if w in ("norm", "l2")]
    if "gnorm" in values:
        return "grad_norm", first("gnorm", "gradnorm")
    if norm_words and not loss_words:
        if "grad" in values:
            return "grad_norm", "grad + norm"
        if present & _PARAM_WORDS:
            return "other", "a norm of parameters/updates/activations, not of the gradient"
        return "grad_norm", "norm alone (the grad norm, as nanoGPT/llm.c print it)"
    if "perplexity" in values:
        return "perplexity", first("ppl", "perplexity")
    if loss_words:
        return "loss", loss_words[0]
    if "accuracy" in values or present & _TOPK:
        return "accuracy", first("acc", "accuracy", "correct", *_TOPK)
    if "map" in present:
        if _at_iou_half(words):
            return "map50", "map at IoU 0.5"
        return "other", "map not at IoU 0.5 alone (COCO's 0.5:0.95, or no threshold named)"
    # the area under the ROC curve ('val_auc', 'valid_auc', 'dev_auroc', 'val_roc_auc'): 0.5 is chance at
    # any class balance; not the area under the precision-recall curve ('val_pr_auc'), whose chance is
    # the share of positives
    if present.intersection(_ROC_AUC) and not present & _PRECISION_RECALL:
        return "auc", first(*_ROC_AUC)
    other = [w for w in words if w in kinds and kinds[w].kind == OTHER and w not in _TIME_PARTS]
    if other:
        return "other", other[0]
    # a time unit with a step word is a time per step ('ms/batch', 'sec_per_iter')
    timed = {"time", "dt", "elapsed", "timestamp"} & values or (
        units & {"s", "ms"} and values <= {"step", "epoch"}
    )
    if timed:
        roles = [w for w in words if w in kinds and kinds[w].kind in (ROLE, COMPONENT_WORD)]
        if "timestamp" in values:
            return "timestamp", first("timestamp")
        if present & _TIME_PARTS or roles:
            return "time_part", first(*_TIME_PARTS, *roles)
        if "dt" in values:
            return "step_time", "dt"
        if "step" in values or "per" in present:
            return "step_time", "time per step/iteration"
        if "epoch" in values:
            return "other", "time per epoch"
        if "elapsed" in values or present & _CUMULATIVE:
            return "elapsed", first(
                "elapsed", "runtime", "wall", "walltime", "uptime", "wallclock", *_CUMULATIVE
            )
        return "step_time", "time"
    if "tokens" in values:
        return "tokens", first("tokens", "tok", "toks", "ntokens")
    if "shard" in values:
        return "shard", "shard"
    if "step" in values:
        return "step", next(w for w in words if w in kinds and kinds[w].value == "step")
    if "epoch" in values:
        return "epoch", first("epoch", "epochs", "ep")
    if "grad" in values:
        return "other", "a gradient statistic that is not a norm"
    if present & {"kl", "kld"}:
        return "loss", "kl (a divergence term of a loss)"
    # a GAN player named by its role letter alone (D, G, D_A, G_B: pytorch-CycleGAN's loss_log
    # 'D_A: 0.25 G_A: 0.91 cycle_A: 1.7'): the loss that player is trained on; not D(x) or D(G(z)),
    # the discriminator's outputs (probabilities), which carry parentheses, nor D_x, D_G_z1 (the same
    # outputs as variable names: a part naming a sampled input)
    sampled_input = any(_SAMPLED_INPUT.fullmatch(part) for part in name.strip().split("_")[1:])
    if _GAN_PLAYER.fullmatch(name.strip()) and not sampled_input:
        return "loss", f"{name.strip()!r}: a GAN player named by its role alone"
    # a GAN player's term: its capital role letter joined to a term by an underscore, the term no other
    # quantity (pix2pix / pix2pixHD / SPADE loss_log 'G_GAN: 1.08 G_L1: 15.1 D_real: 0.43 D_fake: 0.66',
    # G_GAN_Feat, G_VGG, D_gp): a term of the loss that player is trained on (G_lr, D_acc resolve before)
    if _GAN_TERM.fullmatch(name.strip()) and not sampled_input:
        return "loss", f"{name.strip()!r}: a term of a GAN player's loss (its role letter, then the term)"
    # a detection head's term named with a split and a suffix of its own, no quantity word (YOLOv10's
    # train/box_om, val/cls_oo: one-to-many and one-to-one heads): the term is a loss; only the words
    # no score is named by (a box, class or objectness score is logged as mAP, precision, accuracy),
    # not iou, dice, mask or seg, which name scores as often as losses
    head_terms = [w for w in words if w in _HEAD_TERM_WORDS]
    if head_terms and any(w in kinds and kinds[w].kind == SPLIT for w in words):
        return "loss", f"{head_terms[0]} under a split (a detection head's loss term)"
    # a loss function named without the word loss (MXNet's 'Train-SmoothL1', Keras's 'mse' when it
    # is compiled as the loss): the loss it computes, ranked below any series named a loss (resolve)
    functions = [w for w in words if w in _LOSS_FUNCTIONS]
    if functions:
        return "loss", f"{functions[0]}{_LOSS_FUNCTION_NAMED}"
    return None, ""


_ROC_AUC = ("auc", "auroc")
# the namespace a validator files its scores under, when the name says no split (Ultralytics)
_VALIDATOR_NAMESPACE = "metrics/"
_PRECISION_RECALL = frozenset({"pr", "prc", "precision", "recall", "ap"})

# the standard losses' names; a name whose only quantity is one of them is that loss
_LOSS_FUNCTIONS = frozenset({"mse", "mae", "smoothl1", "huber", "bce", "hinge"})
_LOSS_FUNCTION_NAMED = " (a loss function's name, not the word loss)"


_GAN_PLAYER = re.compile(r"[DG](?:_?[A-Za-z0-9])?")
_GAN_TERM = re.compile(r"[DG](?:_[A-Z0-9])?_[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*")
# a part naming a sampled input (D_G_z1: the discriminator's output on G(z), D_x: on x): no loss term
_SAMPLED_INPUT = re.compile(r"[a-z]\d*")
_HEAD_TERM_WORDS = frozenset({"box", "bbox", "cls", "dfl", "obj", "objectness", "rpn", "centerness"})


_FIELD_BY_SPLIT: dict[str, dict[str | None, str | None]] = {
    "loss": {"train": "loss", None: "loss", "validation": "val_loss", "test": "test_loss"},
    # a detector's mAP is computed on its validation set (YOLO's results.csv names no split:
    # 'metrics/mAP50(B)'); one of the training or test split is not that series
    "map50": {"train": None, None: "val_map50", "validation": "val_map50", "test": None},
    # a ROC AUC is judged on validation; Keras names the training one by the bare name ('auc')
    "auc": {"train": None, None: None, "validation": "val_auc", "test": None},
    "accuracy": {
        "train": "train_accuracy",
        None: "train_accuracy",
        "validation": "val_accuracy",
        "test": "test_accuracy",
    },
}
_TRAIN_FIELDS = {
    "learning_rate": "learning_rate",
    "grad_norm": "grad_norm",
    "step_time": "step_time_sec",
    "elapsed": "elapsed_sec",
    "timestamp": "timestamp_sec",
    "tokens": "tokens",
    "step": "step",
    "epoch": "epoch",
    "shard": "shard_id",
}

# internal quantities reported under the API's names
_PUBLIC_QUANTITY = {"time_part": "step_time", "shard": "counter", "step": "counter", "epoch": "counter"}


# decisions a namespace can override: a counter after a namespace ('loss/epoch' is an epoch mean),
# a bare time or gradient word ('time/...' is composer's namespace of progress counters)
_WEAK = {"step", "epoch", "time"}


def _leaf_quantity(name: str, words: list[str]) -> tuple[str | None, str]:
    """The quantity of the innermost '/'-segments that name one ('losses/approx_kl' is a KL
    estimate filed under losses, 'memory/max_active(GiB)' a memory figure), else of the whole name."""
    segments = [segment for segment in name.split("/") if segment.strip()]
    for start in range(len(segments) - 1, 0, -1):
        tail = "/".join(segments[start:])
        if not any(WORDS[w].kind in (QUANTITY, OTHER) for w in tokens(tail) if w in WORDS):
            continue  # a unit or qualifier alone ('tok/s', 'pg1') says nothing on its own
        quantity, decided = _quantity(tokens(tail), tail)
        if quantity is not None and quantity not in _WEAK and not decided.startswith("a gradient statistic"):
            return quantity, f"{decided}, in the last segment(s) {tail!r}"
    return _quantity(words, name)


_EVALUATION_SPLITS = ("validation", "test")
_GLUED = re.compile(r"\b([a-z]) (\d+)\b")  # 'g 0' -> 'g0' in a label


def _set_label(words: list[str], split: str | None) -> tuple[set[int], str | None, int]:
    """The positions of the words naming an evaluation set, the label, and its number (see the
    module docstring, step 6): the words between the split word and the first quantity word when
    each is unknown, a number, or a letter glued to a number ('g0'), or a dataloader index."""
    if split not in _EVALUATION_SPLITS:
        return set(), None, 0
    kinds = [WORDS[w].kind if w in WORDS else None for w in words]
    positions: set[int] = set()
    start = kinds.index(SPLIT)
    stop = next((i for i in range(start + 1, len(words)) if kinds[i] == QUANTITY), None)
    if stop is not None and stop > start + 1:
        between = range(start + 1, stop)

        def labelled(i: int) -> bool:
            glued = len(words[i]) == 1 and i + 1 < stop and words[i + 1].isdigit()
            return kinds[i] is None or words[i].isdigit() or glued

        if all(labelled(i) for i in between):
            positions = set(between)
    for i in range(1, len(words)):
        previous = words[i - 1]
        index_word = previous in ("dataloader", "dl") or (previous == "idx" and "dataloader" in words[:i])
        if words[i].isdigit() and index_word:
            positions |= {i, *(j for j in range(i) if words[j] in ("dataloader", "dl", "idx"))}
    if not positions:
        return set(), None, 0
    label = _GLUED.sub(r"\1\2", " ".join(words[i] for i in sorted(positions)))
    numbers = [int(words[i]) for i in sorted(positions) if words[i].isdigit()]
    return positions, label, numbers[-1] if numbers else 0


def _family(words: list[str], label_positions: set[int]) -> str:
    out: list[str] = []
    for i, word in enumerate(words):
        if i not in label_positions:
            out.append(word)
        elif not out or out[-1] != "*":
            out.append("*")
    return " ".join(out)


def is_split_word(word: str) -> bool:
    """True for a word that names a data split ('train', 'valid', 'test'; WORDS[word].value says which)."""
    return word in WORDS and WORDS[word].kind == SPLIT


def names_split_only(name: str) -> bool:
    """Every word of ``name`` is a split word ('train', 'valid', 'val_'): a column that says which
    split its numbers are of, not what they are (a table ``losses.csv`` of columns train, valid)."""
    words = tokens(name)
    return bool(words) and all(is_split_word(w) for w in words)


def resolve(name: str) -> Meaning:
    """What the logged ``name`` means (see the module docstring)."""
    words = tokens(name)
    quantity, decided = _leaf_quantity(name, words)
    if quantity is None:
        return Meaning(name, None, None, None, None, None, False, False, f"no quantity word in {words}")
    split_words = {w for w in words if w in WORDS and WORDS[w].kind == SPLIT}
    splits = [WORDS[w].value for w in words if w in split_words]
    # the first split word decides ('loss/train/total', 'lm loss validation')
    split = splits[0] if splits else None
    unit = _unit(words, quantity)
    reasons = [f"{quantity} ({decided})"]
    if split:
        reasons.append(f"split {split}")
    if unit:
        reasons.append(f"unit {unit}")
    label_positions, label, label_index = _set_label(words, split)
    if split is None and quantity == "accuracy" and name.strip().lower().startswith(_VALIDATOR_NAMESPACE):
        # Ultralytics' results.csv files its validator's scores under 'metrics/' ('metrics/accuracy_top1',
        # 'metrics/mAP50(B)') beside 'train/loss' and 'val/loss'; Composer names the split there
        # ('metrics/eval/MulticlassAccuracy'): an accuracy there with no split word is validation's
        split = "validation"
        reasons.append(f"under {_VALIDATOR_NAMESPACE!r} with no split word: the validator's")
    rank, aggregation, index, rank_reasons, term = _rank(words, quantity, split, name, label_positions)
    if label is not None:
        rank, index = max(rank, VARIANT), label_index
        rank_reasons.append(f"evaluation set {label!r} (one set of possibly several)")
    loss_functions = (
        tuple(w for w in words if w in _LOSS_FUNCTIONS) if _LOSS_FUNCTION_NAMED in decided else ()
    )
    if loss_functions and rank == PLAIN:
        # 'mse' beside 'loss' is a metric (Keras logs its compiled metrics by their function names):
        # it stands in only for a log with no series named a loss
        rank = VARIANT
        rank_reasons.append("named by its function alone: it stands in when no series is named a loss")
    meaningful = sum(1 for w in words if not w.isdigit())
    reasons += rank_reasons
    base = "loss" if quantity in ("loss", "perplexity") else quantity
    field_name: str | None
    if base in _FIELD_BY_SPLIT:
        field_name = _FIELD_BY_SPLIT[base][split]
    elif base in _TRAIN_FIELDS:
        field_name = _TRAIN_FIELDS[base] if split in (None, "train") else None
        if field_name is None:
            reasons.append(f"{base} of the {split} split: not a training series")
    else:
        field_name = None
    if quantity == "time_part":
        reasons.append("a part of the step's time, not the step")
    qualifiers = set(words) - {decided} - split_words
    if quantity == "step" and decided in _PLURAL_COUNTS and qualifiers and not qualifiers <= _RUNNING:
        field_name = None  # 'save_steps', 'eval_steps', 'gradient_accumulation_steps'
        reasons.append("a plural count with a qualifier: a number of steps (a setting), not the counter")
    elif quantity in ("step", "epoch") and set(words) & _PLANNED:
        field_name = None
        reasons.append(
            "total/max with a counter: the planned number (total_steps, max_epochs), not the counter"
        )
    if quantity in _LOSS_WORDS and field_name is not None and set(words) & _COUNT_WORDS:
        field_name = None
        reasons.append("a count word beside the loss: the number of something (a setting, a tally)")
    elif quantity in _LOSS_WORDS and field_name is not None and words and words[-1] in _COEFFICIENT_WORDS:
        field_name = None
        reasons.append("a coefficient word beside the loss: the weight of a loss term (a setting)")
    summary = [w for w in words if w in WORDS and WORDS[w].kind == SUMMARY]
    if summary:
        field_name = None
        reasons.append(f"{summary[0]}: {WORDS[summary[0]].reason}")
    return Meaning(
        name=name,
        field=field_name,
        split=split,
        quantity=_PUBLIC_QUANTITY.get(quantity, quantity),
        unit=unit,
        aggregation=aggregation,
        primary=rank == PLAIN and field_name is not None,
        understood=True,
        why="; ".join(reasons),
        rank=rank,
        index=index,
        words=meaningful,
        label=label,
        family=_family(words, label_positions),
        term=term and rank == COMPONENT,
        guessed=label is not None or any(r.startswith("unknown word") for r in rank_reasons),
        loss_functions=loss_functions,
    )


def _unit(words: list[str], quantity: str) -> str | None:
    units = [WORDS[w].value for w in words if w in WORDS and WORDS[w].kind == UNIT]
    if quantity == "perplexity":
        return "perplexity"
    if quantity == "loss":
        if any(w in ("bpc", "bpb", "bpt", "bpd") for w in words) or "bits" in units:
            return "bits"
        return "nats" if "nats" in units else None
    if quantity == "accuracy":
        return "percent" if "percent" in units else None
    if quantity in ("step_time", "elapsed", "time_part"):
        return next((u for u in ("ms", "s", "min", "h") if u in units), None)
    return None


_INDEX_AFTER = ("group", "groups", "param_group", "pg", "dataloader", "idx", "dl")


def _rank(
    words: list[str], quantity: str, split: str | None, name: str, label_positions: set[int]
) -> tuple[int, str | None, int, list[str], bool]:
    """(rank, aggregation, group index, reasons, term) from the words around the quantity; the
    words naming an evaluation set (``label_positions``) are read by ``resolve``. ``term``: every
    demotion to a component came from a word naming one of the task's terms of a composite loss
    (box, cls, recon), none from an auxiliary term, a role, a part, a transform or another metric."""
    rank, aggregation, index = PLAIN, None, 0
    reasons: list[str] = []
    terms = others = 0

    def demote(to: int, reason: str, term: bool = False) -> None:
        nonlocal rank, terms, others
        rank = max(rank, to)
        reasons.append(reason)
        if to == COMPONENT:
            terms, others = terms + term, others + (not term)

    counter = quantity in ("step", "epoch")
    for position, word in enumerate(words):
        if position in label_positions:
            continue
        previous = words[position - 1] if position else ""
        entry = WORDS.get(word)
        if word.isdigit():
            if previous in _INDEX_AFTER:
                index = int(word) - (1 if previous == "pg" else 0)  # Lightning numbers groups from pg1
                if index > 0:
                    demote(VARIANT, f"parameter group / dataloader {index} (group 0 is the plain series)")
            elif previous in ("grad", "gradient", "norm", "l2") or previous.isdigit():
                pass  # a p-norm order (grad_2.0_norm) and its decimals
            elif quantity == "accuracy" and previous in ("acc", "accuracy"):
                if word != "1":
                    demote(COMPONENT, f"top-{word} accuracy, not top-1")
            else:
                demote(VARIANT, f"a numbered series ({word})")
            continue
        if entry is None:
            demote(VARIANT, f"unknown word {word!r}")
            continue
        kind, value = entry.kind, entry.value
        if kind == QUANTITY and value in ("step", "epoch") and not counter and quantity != "step_time":
            aggregation = value
            if split in ("validation", "test") and value == "step":
                demote(COMPONENT, "one evaluation batch's value (Lightning's _step during validation)")
            elif split not in ("validation", "test") and value == "epoch":
                demote(VARIANT, "an epoch aggregate of a per-step series")
        elif kind == QUANTITY and counter:
            if name.startswith("_"):
                demote(VARIANT, "W&B's own count of log calls (_step), not the trainer's step")
            if word == "batch":
                demote(VARIANT, "a batch counter (may restart each epoch)")
            if quantity == "step" and "epoch" in words:
                demote(COMPONENT, "a step counter within an epoch")
        elif kind == AGG:
            aggregation = "interval"
            if value == "smoothed":
                demote(VARIANT, f"{word}: a smoothed copy of the series")
        elif kind == UNIT and value == "bits" and quantity == "loss":
            demote(VARIANT, "a loss in bits (the nats series is preferred)")
        elif kind == COMPONENT_WORD:
            if word in ("clip", "clipped") and quantity == "grad_norm":
                demote(VARIANT, "the norm after clipping")
            elif word == "pg" and quantity == "learning_rate":
                pass  # Lightning's lr-AdamW/pg1: a parameter group index follows
            else:
                demote(COMPONENT, f"{word}: {entry.reason}", term=value == "term" and quantity == "loss")
        elif kind == ROLE:
            demote(VARIANT if value == "critic" else COMPONENT, entry.reason)
        elif kind == PART:
            demote(COMPONENT, f"{word}: {entry.reason}")
        elif kind == VS:
            demote(COMPONENT, "the same series plotted against another axis (vs samples)")
        elif kind == OTHER and quantity in ("loss", "perplexity", "accuracy", "learning_rate", "grad_norm"):
            demote(COMPONENT, f"{word}: {entry.reason}")
    if quantity == "perplexity" or any(w in ("bpc", "bpb", "bpt", "bpd") for w in words):
        demote(VARIANT, "a loss stated in another unit (the nats series is preferred)")
    return rank, aggregation, index, reasons, terms > 0 and others == 0


# --------------------------------------------------------------------------- assigning a file's names


@dataclass
class Assignment:
    """Which name feeds which field, the other candidates, ambiguities and names not understood."""

    columns: dict[str, str] = field(default_factory=dict)  # field -> the chosen source name
    candidates: dict[str, list[str]] = field(
        default_factory=dict
    )  # field -> names resolved to it, best first
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # fields with equally plausible candidates
    not_understood: list[str] = field(default_factory=list)  # names it could not place
    meanings: dict[str, Meaning] = field(default_factory=dict)  # name -> its Meaning
    overridden: dict[str, str] = field(default_factory=dict)  # field -> name chosen by an override
    sets: dict[str, list[str]] = field(default_factory=dict)  # field -> its evaluation sets' names
    missing_overrides: dict[str, str] = field(default_factory=dict)  # field -> override naming no column
    held_out_as_test: dict[str, str] = field(default_factory=dict)  # validation field -> its 'test' name
    terms: dict[str, list[str]] = field(default_factory=dict)  # loss field logged only as terms -> them

    def get(self, name: str) -> str | None:
        return self.columns.get(name)

    def shared_by_most(self, name: str, values_of: Callable[[str], Sequence[float | None]]) -> str | None:
        """Of the numbered parameter groups logged for ``name`` (x/lr0, x/lr1, x/lr2; lr/pg0 ..
        lr/pg2: the chosen name and its candidates that differ from it in their numbers only), the
        one whose logged values most other groups share at every row, made the choice; None when
        none is shared (each group on a schedule of its own: the choice stays). Most groups of an
        optimizer share one schedule; a group apart is a special one (YOLO warms its biases down
        from warmup_bias_lr 0.1 while the weights warm up from 0), and its curve is not the run's.
        Returns the name chosen when it changed the choice."""
        chosen = self.columns.get(name)
        if chosen is None or name in self.overridden:
            return None
        numbered = _NUMBERS.sub("#", chosen)
        options = [c for c in self.candidates.get(name, []) if _NUMBERS.sub("#", c) == numbered]
        if chosen not in options or len(options) < 2:
            return None
        series = {
            option: [None if v is None or math.isnan(v) else v for v in values_of(option)]
            for option in options
        }

        def sharing(option: str) -> int:
            return sum(
                1 for other in options if other != option and _same_series(series[option], series[other])
            )

        best = max(options, key=lambda option: (sharing(option), option == chosen, -options.index(option)))
        if sharing(best) == 0 or best == chosen:
            return None
        self.columns[name] = best
        if name in self.ambiguous:
            self.ambiguous[name] = [best, *(o for o in self.ambiguous[name] if o != best)]
        return best

    def notes(self) -> list[str]:
        """One grouped "not understood" line, one line per ambiguity, per stand-in (a variant used
        because no plain series was logged) and per override that names no column."""
        lines: list[str] = []
        if self.not_understood:
            lines.append(NOT_UNDERSTOOD + ", ".join(self.not_understood))
        for name, options in self.ambiguous.items():
            lines.append(
                f"{name}: ambiguous between {', '.join(repr(o) for o in options)}; used {options[0]!r} "
                f"(choose with --map {name}=<name>)"
            )
        for name, source in self.columns.items():
            meaning = self.meanings.get(source)
            if name in self.sets:
                continue  # aliases.evaluation_sets says how the sets became one series
            if name in self.terms:
                lines.append(
                    f"{name} <- {source!r}: the log has this loss only as the terms of a sum "
                    f"({', '.join(self.terms[name])}), no total; the first logged term stands in "
                    f"(choose another with --map {name}=<name>)"
                )
            elif name not in self.overridden and meaning is not None and meaning.rank > PLAIN:
                lines.append(f"{name} <- {source!r} stands in for a plain series not logged ({meaning.why})")
        for name, source in self.held_out_as_test.items():
            lines.append(
                f"{name} <- {source!r}: the only held-out series is named 'test'; it is read as the "
                "validation series (many scripts call their validation set 'test')"
            )
        for name, source in self.missing_overrides.items():
            lines.append(
                f"override {name}={source}: no such name in this log; resolved from the names instead"
            )
        return lines


_NUMBERS = re.compile(r"\d+")  # a parameter group's number in its name


def _same_series(a: Sequence[float | None], b: Sequence[float | None]) -> bool:
    """Two logged series equal at every row (to a relative 1e-6: printed with different digits)."""
    return len(a) == len(b) and all(
        (x is None and y is None)
        or (x is not None and y is not None and abs(x - y) <= 1e-6 * max(abs(x), abs(y)))
        for x, y in zip(a, b, strict=True)
    )


# words that say a series is the sum of the others: among equally plain candidates, it is the one
_TOTAL_WORDS = {"total", "sum", "overall", "combined"}  # combined: Ludwig's all-outputs loss

# the loss fields a term of a composite loss stands in for when no total is logged
_LOSS_FIELDS = ("loss", "val_loss", "test_loss")


# the split a field's name states when it says one (a training loss is `train_...`)
_FIELD_SPLITS = {
    "loss": "train",
    "train_accuracy": "train",
    "val_loss": "validation",
    "val_accuracy": "validation",
}


def _order(meaning: Meaning) -> tuple[int, int, int]:
    return (meaning.rank, meaning.words, meaning.index)


def assign(names: Iterable[str], overrides: Mapping[str, str] | None = None) -> Assignment:
    """Resolve every name and choose, per field, the best candidate; ``overrides`` (field -> source
    name, from --map or the user's alias file) win."""
    result = Assignment()
    present = list(dict.fromkeys(str(n) for n in names))
    for name in present:
        meaning = resolve(name)
        result.meanings[name] = meaning
        if not meaning.understood:
            result.not_understood.append(name)
        elif meaning.field is not None:
            result.candidates.setdefault(meaning.field, []).append(name)
    loss_candidates = [result.meanings[n] for f in _LOSS_FIELDS for n in result.candidates.get(f, [])]
    functions = {w for meaning in loss_candidates for w in meaning.loss_functions}
    if len(functions) > 1 or any(not meaning.loss_functions for meaning in loss_candidates):
        # a log that names a loss logs its other loss-function names as metrics (Keras's 'mae' beside
        # 'loss', a 'Test MAE' after 'Train Loss'): they stand in for no loss field; nor do two functions
        # logged side by side (a counting model's 'mae' and 'mse': a trainer minimises one objective, so
        # at least one is a metric, and the log does not say which)
        for field_name in set(_LOSS_FIELDS) & set(result.candidates):
            result.candidates[field_name] = [
                n for n in result.candidates[field_name] if not result.meanings[n].loss_functions
            ]
    for name_list in result.candidates.values():
        name_list.sort(key=lambda n: _order(result.meanings[n]))
    taken: set[str] = set()
    for field_name, source in (overrides or {}).items():
        if source in present:
            result.columns[field_name] = source
            result.overridden[field_name] = source
            taken.add(source)
        else:
            result.missing_overrides[field_name] = source
    for field_name, options in result.candidates.items():
        if field_name in result.columns:
            continue
        eligible = [n for n in options if n not in taken and result.meanings[n].rank < COMPONENT]
        if field_name in _LOSS_FIELDS:
            eligible = _whole_before_parts(eligible, present)
        terms = [n for n in present if n in options and n not in taken and result.meanings[n].term]
        if (
            field_name in _LOSS_FIELDS
            and len(terms) >= 2
            and all(result.meanings[n].rank == VARIANT and result.meanings[n].guessed for n in eligible)
        ):
            # beside two or more of the task's terms, a loss named by a word the table does not know
            # ('dehaze_loss' beside YOLO's box/cls/dfl: a research head's extra term) is one more term
            # of the sum, not the total; a known term stands in first, whatever the logged order,
            # so the stand-in is always one the table names as a term (loss_objective: term)
            terms = [*terms, *(n for n in present if n in eligible)]
            eligible = []
        if not eligible:
            if terms and field_name in _LOSS_FIELDS:
                # a loss logged only as the terms of its sum (YOLO's box/cls/dfl, a VAE's recon/kl)
                result.columns[field_name] = terms[0]
                result.terms[field_name] = terms
            continue
        result.columns[field_name] = eligible[0]
        sets = _evaluation_sets(eligible, result.meanings)
        if len(sets) > 1:
            result.sets[field_name] = sets
            result.columns[field_name] = sets[0]
            continue
        best = _order(result.meanings[eligible[0]])
        tied = [n for n in eligible if _order(result.meanings[n]) == best]
        totals = [n for n in tied if _TOTAL_WORDS & set(tokens(n))]
        own_split = [n for n in tied if result.meanings[n].split == _FIELD_SPLITS.get(field_name)]
        own_name = [n for n in tied if tokens(n) == tokens(field_name)]
        if len(tied) > 1 and len(totals) == 1:
            # 'total_loss' beside 'loss_ce' (detectron2, mmdet): the name that says it is the sum
            result.columns[field_name] = totals[0]
        elif len(tied) > 1 and len(own_name) == 1:
            # 'loss' beside 'crossentropy' (Keras: the objective, with any regulariser, beside a
            # metric of the same kind): the name that is the field's own
            result.columns[field_name] = own_name[0]
        elif len(tied) > 1 and len(own_split) == 1:
            # 'train_loss' beside 'loss_mse' (a term of a combined loss, or of no stated split): the
            # name that says it is the field's own split
            result.columns[field_name] = own_split[0]
        elif len(tied) > 1 and field_name in _LOSS_FIELDS and (value_side := _value_side(tied)):
            # an actor-critic's 'critic_loss' beside its 'actor_loss' (A2C/PPO's value beside its policy
            # loss): the value estimate's regression error, whose fit can be followed
            result.columns[field_name] = value_side
        elif len(tied) > 1:
            result.ambiguous[field_name] = tied
    # a run whose only held-out split is named 'test' is judged on it: many scripts evaluate on a
    # set they call 'test' during training (DINO, MAE, torchvision references)
    for test_field, val_field in (("test_loss", "val_loss"), ("test_accuracy", "val_accuracy")):
        if val_field not in result.columns and test_field in result.columns:
            result.columns[val_field] = result.held_out_as_test[val_field] = result.columns[test_field]
    return result


def _value_side(tied: list[str]) -> str | None:
    """Of an actor-critic's losses, tied as the run's loss, the value side's: 'critic_loss' beside
    'actor_loss', 'value_loss' beside 'policy_loss'. The policy loss is advantage-weighted
    log-likelihood whose level hovers near zero by construction (advantages are centred), so it
    shows neither progress nor trouble; the value loss is a regression of the returns. None unless
    exactly one name is the value side's and every other the policy side's."""
    value = [n for n in tied if is_value_side(n)]
    policy = [n for n in tied if _POLICY_SIDE & set(tokens(n))]
    if len(value) == 1 and policy and len(value) + len(policy) == len(tied):
        return value[0]
    return None


def is_value_side(name: str) -> bool:
    """An actor-critic's value-side loss ('critic_loss', 'value_loss', 'vf_loss'), not its policy's."""
    words = set(tokens(name))
    return bool(_VALUE_SIDE & words) and not _POLICY_SIDE & words


def _numbered_parts(names: Iterable[str]) -> set[str]:
    """The names that are one numbered member of a family logged side by side: the same words but a
    number ('avg_loss_group:0', 'avg_loss_group:1': one group's loss each; 'loss_0', 'loss_1')."""
    pattern: dict[str, tuple[str, ...]] = {}
    for name in names:
        words = tokens(name)
        if any(w.isdigit() for w in words):
            pattern[name] = tuple("#" if w.isdigit() else w for w in words)
    counts = Counter(pattern.values())
    return {name for name, p in pattern.items() if counts[p] >= 2}


def _whole_before_parts(eligible: list[str], present: list[str]) -> list[str]:
    """The candidates of a loss field less the numbered parts of a family (one data group's, one
    head's loss: ``_numbered_parts``) when a candidate that is no such part is logged beside them
    (group DRO's 'avg_actual_loss' beside 'avg_loss_group:0' .. ':3'): the whole run's loss is the
    one that names no part. With parts only, they stay (a family of evaluation sets is read as such)."""
    parts = _numbered_parts(present)
    whole = [n for n in eligible if n not in parts]
    return whole if whole and len(whole) < len(eligible) else eligible


def _evaluation_sets(eligible: list[str], meanings: Mapping[str, Meaning]) -> list[str]:
    """The names of the evaluation sets that feed one field (module docstring, step 6): the best
    candidate's family members of its rank, lowest index first, else in logged order."""
    best = meanings[eligible[0]]
    if best.label is None:
        return []
    members = [n for n in eligible if meanings[n].family == best.family and meanings[n].rank == best.rank]
    return sorted(members, key=lambda n: (meanings[n].index, eligible.index(n)))


def field_of(key: str) -> str:
    """A canonical field from a user's key: a field name, or any name resolve() places (lr, norm,
    train_loss); ValueError naming the key and the accepted keys otherwise."""
    if key in FIELDS:
        return key
    aliases = {"loss_scale": "loss_scale"}
    if key in aliases:
        return aliases[key]
    meaning = resolve(key)
    if meaning.field is None:
        raise ValueError(
            f"unknown field {key!r} in the map: expected one of {', '.join(FIELDS)} "
            "(or a name such as lr, norm, train_loss, val_loss, val_acc)"
        )
    return meaning.field


def parse_map(text: str) -> dict[str, str]:
    """'step=iter,train_loss=train/CrossEntropyLoss,lr=optim/lr' -> {field: source name}."""
    mapping: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, source = part.partition("=")
        if not sep or not key.strip() or not source.strip():
            raise ValueError(f"map entry {part!r}: expected field=name (e.g. lr=optim/lr)")
        mapping[field_of(key.strip())] = source.strip()
    return mapping
