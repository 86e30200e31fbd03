"""Check a run's files before the dbt build: a file that cannot be used stops here, named.

    run-diagnosis validate RUN_FOLDER        # exit 0 usable, 2 not (one-line error)

What is checked (every check reads the bytes once; a 200k-row log takes well under a second):

- encoding: UTF-8 with or without BOM; UTF-16 / UTF-32 (BOM, or the NUL pattern of a
  BOM-less UTF-16 file) is named as such; other bytes that are not UTF-8 give row and column;
- CSV headers: empty names, duplicate names (``grad_norm`` twice would otherwise be read as
  ``grad_norm.1`` and one of them silently lost) and missing columns, naming the column;
- CSV rows: a row with more fields than the header (row and field number); a file without
  quotes, carriage returns or NUL (each line then splits on commas alone, as the csv reader
  would split it) is checked line by line with string methods, not parsed row by row: a 1M-row
  log in about 0.3 s instead of 2 s; any other file, or one with a row too wide, is read by the
  csv reader, which names the row;
- the train log has at least one data row, or the eval log has ("no training rows (and no evaluation
  rows)": nothing to diagnose; a run that logs only its validation loss is diagnosed on that);
- run_config.json: nesting deeper than MAX_CONFIG_DEPTH (scanned without recursion, so a
  100,000-level document cannot end in a RecursionError), JSON syntax (line and column),
  and the type of every key the checks read (a string where a number is expected names the
  key). NaN, Infinity and negative numbers are the right type: they are impossible values,
  reported by the diagnosis itself (config_mismatch), not input errors.

``validate_source`` runs the same checks on whatever canonical files a source folder holds
(before an importer reads it: a canonical file without one of its columns is refused there, as
``validate_run`` and the dbt build refuse it, never written empty); ``validate_run`` requires all
five (the folder dbt reads).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Collection, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

from run_diagnosis.cli import prog
from run_diagnosis.run_files import CONFIG_TYPES, CSV_COLUMNS, FILE_SUFFIXES, REQUIRED_CONFIG_KEYS

EXIT_OK, EXIT_BAD_INPUT = 0, 2
MAX_CONFIG_DEPTH = 64
SNIFF_BYTES = 4096
SHOWN_CHARS = 40

# kind -> (file-name suffix, columns); the dbt project finds each file by the same suffix
CSV_FILES = {kind: (FILE_SUFFIXES[kind], tuple(columns)) for kind, columns in CSV_COLUMNS.items()}
CONFIG_SUFFIX = FILE_SUFFIXES["config"]
NON_FINITE = ("NaN", "Infinity", "-Infinity")

BOMS = (  # longest first: the UTF-32 LE BOM starts with the UTF-16 LE one
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian, with BOM)"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian, with BOM)"),
    (b"\xff\xfe", "UTF-16 (little-endian, with BOM)"),
    (b"\xfe\xff", "UTF-16 (big-endian, with BOM)"),
)
UTF8_BOM = b"\xef\xbb\xbf"
# characters after which a CSV line is no longer "fields between commas" for the csv reader
NOT_PLAIN = ('"', "\r", "\x00")


class RunValidationError(Exception):
    """A run file cannot be used; the message is one line naming file, row and column."""


def fail(path: Path, where: str, problem: str) -> RunValidationError:
    return RunValidationError(f"{path}{': ' + where if where else ''}: {problem}")


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def wide_encoding(head: bytes) -> str | None:
    """UTF-16/32 named by its BOM, or by NUL bytes in every other position (BOM-less UTF-16)."""
    for bom, name in BOMS:
        if head.startswith(bom):
            return name
    sample = head[:200]
    if len(sample) >= 8:
        even_nuls = sample[0::2].count(0) / len(sample[0::2])
        odd_nuls = sample[1::2].count(0) / len(sample[1::2])
        if odd_nuls > 0.4 and even_nuls < 0.1:
            return "UTF-16 (little-endian, no BOM)"
        if even_nuls > 0.4 and odd_nuls < 0.1:
            return "UTF-16 (big-endian, no BOM)"
    return None


def read_text(path: Path) -> str:
    """The file as text: UTF-8, a leading BOM dropped; anything else is a named error."""
    data = path.read_bytes()
    encoding = wide_encoding(data[:SNIFF_BYTES])
    if encoding is not None:
        raise fail(
            path,
            "",
            f"encoded as {encoding}: expected UTF-8 (with or without BOM); "
            "convert it, e.g. `iconv -f UTF-16 -t UTF-8`",
        )
    body = data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        before = body[: error.start]
        row = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise fail(
            path,
            f"row {row}, column {column}",
            f"byte 0x{body[error.start]:02x} is not UTF-8: expected UTF-8 text",
        ) from error


def check_csv(path: Path, kind: str, required: Sequence[str]) -> int:
    """Header and row shape of one CSV; returns the number of data rows."""
    _, columns = CSV_FILES[kind]
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise fail(path, "row 1 (header)", f"the file is empty: expected a header {','.join(columns)}")
    names = [name.strip().lower() for name in header]
    seen: dict[str, int] = {}
    for number, name in enumerate(names, start=1):
        if not name:
            raise fail(path, f"row 1 (header), column {number}", "empty column name")
        if name in seen:
            raise fail(
                path,
                f"row 1 (header), column {number}",
                f"column '{name}' appears twice (columns {seen[name]} and {number}): "
                f"expected each of {','.join(columns)} once",
            )
        seen[name] = number
    missing = [column for column in required if column not in seen]
    if missing:
        raise fail(
            path,
            "row 1 (header)",
            f"missing column(s) {', '.join(missing)}: expected {','.join(columns)}; found {','.join(names)}",
        )
    plain = plain_rows(text, len(header))
    if plain is not None:
        return plain
    rows = 0
    for row in reader:
        if len(row) > len(header):
            raise fail(
                path,
                f"row {reader.line_num}, column {len(header) + 1}",
                f"{len(row)} fields but the header has {len(header)}: expected {','.join(names)}",
            )
        rows += 1 if any(cell.strip() for cell in row) else 0
    return rows


def plain_rows(text: str, width: int) -> int | None:
    """check_csv's count of data rows (rows with a non-blank cell) of a CSV text with no quote,
    carriage return or NUL, when no row has more than width fields; None otherwise (the csv
    reader then reads it and names the row). In such a text the csv reader's rows are the lines
    split on commas alone, so the count of commas per line is the number of fields less one, and a
    row has a non-blank cell exactly when the line without its commas is not blank."""
    if any(char in text for char in NOT_PLAIN):
        return None
    lines = text.split("\n")[1:]  # after the header
    if max(map(str.count, lines, repeat(",")), default=0) >= width:
        return None
    return sum(1 for line in lines if line.replace(",", "").strip())


def config_depth_error(text: str) -> tuple[int, int] | None:
    """(line, column) where nesting exceeds MAX_CONFIG_DEPTH, scanning iteratively; else None."""
    depth, in_string, escaped, line, line_start = 0, False, False, 1, 0
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_CONFIG_DEPTH:
                return line, index - line_start + 1
        elif char in "]}":
            depth -= 1
        if char == "\n":
            line, line_start = line + 1, index + 1
    return None


def lookup(document: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted key path."""
    value: Any = document
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def type_problem(value: Any, expected: str) -> str | None:
    """Why value is not of the expected config type (None: it is, or it is null)."""
    if value is None or (expected != "text" and value in NON_FINITE):
        return None  # null: a declared unknown; NaN/Infinity: an impossible value, a finding
    if expected == "text":
        return None if isinstance(value, str | bool | int | float) else f"found {type(value).__name__}"
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return f"found the string {shown(value)}"
    if isinstance(number, bool) or not isinstance(number, int | float):
        return f"found {type(value).__name__} {shown(value)}"
    if expected == "integer" and float(number) != int(float(number)):
        return f"found {shown(value)}, not a whole number"
    return None


def check_config(path: Path, *, require_keys: bool) -> None:
    text = read_text(path)
    too_deep = config_depth_error(text)
    if too_deep is not None:
        raise fail(
            path,
            f"row {too_deep[0]}, column {too_deep[1]}",
            f"JSON nested deeper than {MAX_CONFIG_DEPTH} levels: expected the run_config.json object",
        )
    try:
        document = json.loads(text, parse_constant=str)  # NaN/Infinity kept, as text, for the checks
    except json.JSONDecodeError as error:
        raise fail(
            path, f"row {error.lineno}, column {error.colno}", f"not valid JSON: {error.msg}"
        ) from error
    if not isinstance(document, dict):
        raise fail(path, "", f"expected a JSON object; found {type(document).__name__}")
    for key, expected in CONFIG_TYPES.items():
        present, value = lookup(document, key)
        if not present:
            if require_keys and key in REQUIRED_CONFIG_KEYS:
                raise fail(path, f"key {key}", "missing: write null for a value the run does not know")
            continue
        problem = type_problem(value, expected)
        if problem is not None:
            wanted = {"text": "text", "number": "a number", "integer": "an integer"}[expected]
            raise fail(path, f"key {key}", f"expected {wanted} or null; {problem}")


def find_file(folder: Path, suffix: str) -> Path | None:
    """The one file in folder ending in suffix (exact names listed, never a glob pattern)."""
    matches = sorted(p for p in folder.iterdir() if p.name.endswith(suffix) and p.is_file())
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches)
        raise fail(folder, "", f"several files end in {suffix} ({names}): keep one run per folder")
    return matches[0] if matches else None


def validate_folder(folder: Path, *, complete: bool, checked: Collection[str] = ()) -> None:
    """Check the canonical files in folder, each with every column (a dropped column is an input
    error, as in the dbt build); complete: all five files must be there; checked: kinds of CSV
    whose file is a byte-for-byte copy of one checked before (only its presence is checked)."""
    counted: dict[str, int] = {}
    train_log: Path | None = None
    for kind, (suffix, columns) in CSV_FILES.items():
        path = find_file(folder, suffix)
        if path is None:
            if complete or kind == "train":
                raise fail(folder, "", f"no *{suffix}: every run folder needs the five canonical files")
            continue
        if kind in checked:
            continue
        counted[kind] = check_csv(path, kind, columns)
        train_log = path if kind == "train" else train_log
    if counted.get("train") == 0 and not counted.get("eval"):
        # a run that logs only its validation loss is diagnosed on that series; with neither there
        # is nothing to diagnose
        raise fail(
            train_log or folder,
            "row 2",
            "no training rows (and no evaluation rows): the header is all there is; nothing to diagnose",
        )
    config = find_file(folder, CONFIG_SUFFIX)
    if config is not None:
        check_config(config, require_keys=complete)
    elif complete:
        raise fail(folder, "", f"no *{CONFIG_SUFFIX}: every run folder needs the five canonical files")


def validate_run(folder: Path, *, checked: Collection[str] = ()) -> None:
    """The folder dbt will read: all five files, full headers (checked: CSV kinds copied byte for
    byte from files checked before, not read again). Raises RunValidationError."""
    validate_folder(folder, complete=True, checked=checked)


def names_canonical_header(path: Path) -> bool:
    """A train log whose header is ours, perhaps damaged: it names ``step`` or at least half of
    the canonical train columns (a header that cannot be decoded counts: its check names why).
    Another tool's log that happens to share the name (a Keras CSVLogger writing train_log.csv:
    epoch,accuracy,loss,...) does not, and is left to the importers."""
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    encoding = wide_encoding(head)
    if encoding is not None:
        return True
    first = head[len(UTF8_BOM) :] if head.startswith(UTF8_BOM) else head
    try:
        line = first.split(b"\n", 1)[0].decode("utf-8")
    except UnicodeDecodeError:
        return True
    names = {name.strip().lower() for name in line.strip().split(",")}
    columns = CSV_FILES["train"][1]
    return "step" in names or 2 * len(names & set(columns)) >= len(columns) or not line.strip()


def validate_source(source: Path) -> None:
    """A source about to be imported: checks the canonical files it holds, if any (a folder, or
    the folder of a canonical file, whose train log has a canonical header: names_canonical_header);
    other formats are left to their importer."""
    folder = source if source.is_dir() else source.parent
    suffixes = [suffix for suffix, _ in CSV_FILES.values()] + [CONFIG_SUFFIX]
    canonical = source.is_dir() or any(source.name.endswith(suffix) for suffix in suffixes)
    train = find_file(folder, CSV_FILES["train"][0]) if canonical else None
    if train is not None and names_canonical_header(train):
        validate_folder(folder, complete=False)


def carry_cut_off_row(source: Path, run_dir: Path) -> bool:
    """When a canonical SOURCE's train log ends mid-row (no line end: the writer was cut off),
    make the copy in run_dir end the same way, so the build sets that row aside (the importer
    re-writes every row with a line end, which would hide it). True when it did."""
    folder = source if source.is_dir() else source.parent
    suffix = CSV_FILES["train"][0]
    original, copy = find_file(folder, suffix), find_file(run_dir, suffix)
    if original is None or copy is None or original.stat().st_size == 0:
        return False
    with original.open("rb") as handle:
        handle.seek(-1, 2)
        if handle.read(1) in b"\r\n":
            return False
    copy.write_bytes(copy.read_bytes().rstrip(b"\r\n"))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("validate"),
        description=(
            "Check a run folder's five canonical files (encoding, headers, row shape, config depth "
            "and types) before the dbt build. Exit status 0: usable; 2: not (one-line error "
            "naming file, row and column)."
        ),
    )
    parser.add_argument("folder", type=Path, help="folder with *train_log.csv, *eval_log.csv, ...")
    args = parser.parse_args(argv)
    try:
        validate_run(args.folder)
    except (RunValidationError, OSError) as error:
        print(f"validate_run: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK
