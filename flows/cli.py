"""`kerneldojo`: run the pipeline, re-run one stage, list stage runs and their lineage."""

from __future__ import annotations

import os
import sys
import time
from typing import Optional

# Quiet, offline-friendly Prefect defaults; a user's own settings win.
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from schemas.config import STAGES, ConfigError, load_config  # noqa: E402

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="kerneldojo: train a model to write correct, fast kernels from PyTorch operator graphs.")
console = Console(width=None if sys.stdout.isatty() else 160)

CONFIG_HELP = "pipeline YAML (default: the embedded tiny config, same as configs/tiny.yaml)"
SET_HELP = "override a config key, e.g. --set sft.epochs=5 (repeatable)"


def _fail(message: str) -> None:
    console.print(f"[red]error:[/] {message}")
    raise typer.Exit(code=2)


def _load(config: Optional[str], overrides: list[str]):
    try:
        return load_config(config, overrides)
    except ConfigError as exc:
        _fail(str(exc))


def _where_to_look(config) -> None:
    from warehouse.home import Home
    from warehouse.tracking import default_tracking_uri

    home = Home.of(config)
    console.print("\n[bold]Where to look[/]")
    console.print(f"  warehouse (DuckDB): {home.warehouse_path}   -> kerneldojo runs")
    console.print(f"  MLflow UI:  MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false mlflow ui --backend-store-uri "
                  f"{default_tracking_uri(home.root)}")
    console.print("  Prefect UI: prefect server start --host 127.0.0.1   (then http://127.0.0.1:4200)")


@app.command()
def run(config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
        set_: list[str] = typer.Option([], "--set", help=SET_HELP)) -> None:
    """Run the whole DAG: synthesize -> hints -> distill -> sft -> rft -> warmup_rl -> leap_rl -> evaluate."""
    cfg = _load(config, set_)
    from flows.pipeline import pipeline

    started = time.perf_counter()
    runs = pipeline(config_path=config, overrides=set_)
    console.print(f"\n[bold green]pipeline finished[/] in {time.perf_counter() - started:.0f} s")
    _print_runs(cfg, only=set(runs.values()))
    _where_to_look(cfg)


@app.command()
def stage(name: str = typer.Argument(..., help=f"one of: {', '.join(STAGES)}"),
          from_run: Optional[str] = typer.Option(None, "--from-run", help="stage run id of the upstream stage "
                                                 "(default: its latest succeeded run)"),
          config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
          set_: list[str] = typer.Option([], "--set", help=SET_HELP),
          resume: Optional[str] = typer.Option(None, "--resume", help="continue an interrupted warmup_rl/leap_rl "
                                               "run from its last checkpoint")) -> None:
    """Re-run one stage against an earlier stage run (old runs and their rows stay untouched), or resume one."""
    if name not in STAGES:
        _fail(f"unknown stage {name!r}; stages are {', '.join(STAGES)}")
    cfg = _load(config, set_)
    from flows.stages import stage as stage_flow
    from warehouse.store import WarehouseError

    try:
        run_id = stage_flow(name=name, from_run=from_run, config_path=config, overrides=set_, resume=resume)
    except (WarehouseError, ConfigError) as exc:
        _fail(str(exc))
    console.print(f"\n[bold green]{name} finished:[/] {run_id}")
    _print_runs(cfg, only={run_id})


@app.command()
def runs(config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
         stage_name: Optional[str] = typer.Option(None, "--stage", help="only runs of this stage")) -> None:
    """A table of stage runs with their lineage (parent runs)."""
    cfg = _load(config, [])
    _print_runs(cfg, stage=stage_name)


@app.command()
def export(run_id: str = typer.Argument(..., help="a stage run whose problems or SFT examples to export"),
           out_dir: str = typer.Argument(..., help="folder for the HF dataset (save_to_disk) and data.parquet"),
           config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP)) -> None:
    """Export a run's problems (synthesize, hints) or SFT examples (distill, rft) as a Hugging Face dataset."""
    import json

    from operators.imports import export_problems, export_rows
    from warehouse.home import Home
    from warehouse.store import Warehouse, WarehouseError

    cfg = _load(config, [])
    wh = Warehouse(Home.of(cfg).warehouse_path)
    try:
        wh.succeeded_run(run_id)
    except WarehouseError as exc:
        _fail(str(exc))
    if wh.count("problems", run_id):
        path = export_problems(wh.problems(run_id), out_dir)
        what = f"{wh.count('problems', run_id)} problems"
    elif wh.count("sft_examples", run_id):
        rows = [{**r, "messages": json.dumps(r["messages"])} for r in wh.sft_examples(run_id)]
        path = export_rows(rows, out_dir)
        what = f"{len(rows)} SFT examples"
    else:
        _fail(f"stage run {run_id} holds no problems or SFT examples to export")
    console.print(f"exported {what} to {path}/dataset and {path}/data.parquet")


def _print_runs(cfg, only: set[str] | None = None, stage: str | None = None) -> None:
    from warehouse.home import Home
    from warehouse.store import Warehouse

    home = Home.of(cfg)
    if not home.warehouse_path.exists():
        console.print(f"no warehouse at {home.warehouse_path} yet: run `kerneldojo run` first")
        return
    wh = Warehouse(home.warehouse_path)
    table = Table(title=f"stage runs in {home.warehouse_path}")
    for col in ("stage run", "stage", "status", "parent", "started", "seconds", "summary"):
        table.add_column(col, overflow="fold")
    for r in wh.stage_runs(stage):
        if only and r.id not in only:
            continue
        summary = wh.summary(r.id)
        seconds = f"{summary.get('wall_seconds', '')}"
        text = ", ".join(f"{k}={v}" for k, v in summary.items() if k != "wall_seconds")
        color = {"succeeded": "green", "failed": "red"}.get(r.status.value, "yellow")
        table.add_row(r.id, r.stage, f"[{color}]{r.status.value}[/]", ",".join(r.parent_ids) or "-",
                      r.started.strftime("%Y-%m-%d %H:%M:%S"), seconds, text[:160])
    console.print(table)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":
    sys.exit(main())
