"""reportgen's text-log reader against a naive reader, on one large generated Trainer stdout.

    python benchmarks/stdout_reader.py [--steps 500000] [--repeat 3]

Writes a console as a Trainer with its progress bar on leaves it under nohup (the tqdm bar redrawn
with carriage returns, a printed dict every `--every` steps, tqdm's clear-and-redraw around each,
an evaluation with its nested bar every 1,000 steps, transformers 5's '%.4g' strings), then reads it
with reportgen's `textlog.read_console` (every message, session and tie besides the metric rows)
and with a naive reference: a Python loop over the lines and their carriage-return segments that
`ast.literal_eval`s every line starting "{'" and gives it the step of the next bar. It checks that
both find the same rows (steps, losses) and reports the median time of each and their ratio.
"""

from __future__ import annotations

import argparse
import ast
import math
import re
import statistics
import tempfile
import time
from pathlib import Path

BAR = re.compile(r"^\s*\d{1,3}%\|[^|]*\|\s*(\d+)/(\d+)\s*\[")


def write_stdout(path: Path, steps: int, every: int, finished: bool = True) -> None:
    """A Trainer's console for `steps` steps: tqdm redraws every step, a dict every `every` steps; the final
    summary unless not `finished` (a run still training: its bar is the last thing drawn)."""
    clear = "\r" + " " * 46 + "\r"
    with open(path, "w", encoding="utf-8") as out:
        out.write("[INFO|trainer.py:1627] 2026-12-04 21:03:09,931 >>   Total optimization steps = "
                  f"{steps:,}\n\r  0%|          | 0/{steps} [00:00<?, ?it/s]")
        for step in range(1, steps + 1):
            pct = step * 100 // steps
            bar = (f"\r{pct:3d}%|{'█' * (pct // 10):<10}| {step}/{steps} "
                   f"[{_interval(step / 4.77)}<{_interval((steps - step) / 4.77)},  4.77it/s]")
            if step % every == 0:
                loss = 4.0 / (1 + step / 10000)
                out.write(f"{clear}{{'loss': '{loss:.4g}', 'grad_norm': '0.0{step % 97 + 1}', "
                          f"'learning_rate': '{5e-3 * (1 - step / steps):.4g}', 'epoch': '{step / 64:.4g}'}}\n")
            out.write(bar)
            if step % 1000 == 0:
                out.write("\n\r  0%|          | 0/4 [00:00<?, ?it/s]\x1b[A\r100%|██████████| 4/4 [00:00<00:00, 30.44it/s]"
                          f"\x1b[A{clear}\n{clear}\x1b[A{{'eval_loss': '{4.0 / (1 + step / 9000):.4g}', "
                          f"'eval_runtime': '0.1351', 'epoch': '{step / 64:.4g}'}}\n")
                out.write(bar)
        if finished:
            out.write(f"\n{clear}{{'train_runtime': '{steps / 4.77:.4g}', 'train_loss': '3.9', 'epoch': '{steps / 64:.4g}'}}\n")


def _interval(seconds: float) -> str:
    """A time as tqdm writes it: MM:SS, or H:MM:SS from an hour."""
    minutes, second = divmod(int(seconds), 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours:d}:{minute:02d}:{second:02d}" if hours else f"{minute:02d}:{second:02d}"


def read_naive(path: Path) -> list[tuple[int | None, str, float]]:
    """(step, metric, value) of every printed dict: literal_eval per dict line, the step of the next bar."""
    rows: list[tuple[int | None, str, float]] = []
    waiting: list[int] = []
    total = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        for segment in line.split("\r"):
            match = BAR.match(segment)
            if match:
                total = total or int(match.group(2))
                if int(match.group(2)) == total:
                    for i in waiting:
                        rows[i] = (int(match.group(1)), *rows[i][1:])
                    waiting.clear()
                continue
            body = segment.lstrip("\x1b[A")
            if body.startswith("{'"):
                values = ast.literal_eval(body)
                key = "loss" if "loss" in values else "eval_loss" if "eval_loss" in values else None
                if key is not None:
                    waiting.append(len(rows))
                    rows.append((None, key, float(values[key])))
    return rows


def read_reportgen(path: Path):
    from reportgen.ingest import textlog

    return textlog.read_console(path, path.name).metrics


def rows_of(frame) -> list[tuple[int | None, str, float]]:
    """reportgen's metric frame as the naive reader's rows (not timed)."""
    steps = frame["step"].tolist()
    loss = frame["loss"].to_numpy(dtype="float64", na_value=float("nan"))
    eval_loss = frame["eval_loss"].to_numpy(dtype="float64", na_value=float("nan"))
    out = []
    for step, train, evaluation in zip(steps, loss, eval_loss, strict=True):
        if not math.isnan(train):
            out.append((int(step), "loss", float(train)))
        elif not math.isnan(evaluation):
            out.append((int(step), "eval_loss", float(evaluation)))
    return out


def timed(read, path: Path, repeat: int) -> tuple[float, list]:
    seconds, result = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        result = read(path)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500_000)
    parser.add_argument("--every", type=int, default=1, help="a printed dict every N steps (logging_steps)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nohup.out"
        write_stdout(path, args.steps, args.every)
        size = path.stat().st_size / 2**20
        naive_s, naive = timed(read_naive, path, args.repeat)
        ours_s, frame = timed(read_reportgen, path, args.repeat)
        ours = rows_of(frame)
        same = [(s, k, round(v, 6)) for s, k, v in naive] == [(s, k, round(v, 6)) for s, k, v in ours]
        print(f"{args.steps:,} steps, a dict every {args.every}, {size:.1f} MiB, median of {args.repeat}")
        print(f"{'reader':<44}{'seconds':>9}{'ratio':>8}{'rows':>12}")
        print(f"{'naive: literal_eval per dict line':<44}{naive_s:>9.2f}{1.0:>8.2f}{len(naive):>12,}")
        print(f"{'reportgen textlog.read_console':<44}{ours_s:>9.2f}{ours_s / naive_s:>8.2f}{len(ours):>12,}")
        print("same steps and values" if same else "DIFFERENT rows")


if __name__ == "__main__":
    main()
