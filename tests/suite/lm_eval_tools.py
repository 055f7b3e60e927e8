"""Reads `deltalogic export samples` output with lm-evaluation-harness's own code.

Usage: python lm_eval_tools.py DIR   (the export's output directory; one folder per model)

Checks every file against lm-eval's `result_schema` TypedDicts (`EvalResults`, `SampleResult`),
finds the files with its loaders (`get_results_filenames`, `get_sample_results_filenames`,
`get_latest_filename`, `get_file_task_name`, `get_file_datetime`), renders `make_table`, and runs
its own `ConfigurableTask.process_results` (the multiple-choice branch) on each sample's
`filtered_resps`. Exits non-zero naming the file and place of the first disagreement; prints one
JSON object per model with what lm-eval read, for the Rust test to compare with the store.
"""

import json
import sys
import types
import typing
from pathlib import Path

import typing_extensions
from lm_eval import result_schema, utils
from lm_eval.api.task import ConfigurableTask

# The one key deltalogic adds to lm-eval's closed dicts: its own ids and metrics.
OURS = "deltalogic"


class SchemaError(Exception):
    pass


def check(value, kind, where, bound=None):
    """Raises SchemaError unless `value` (parsed JSON) is of the annotation `kind`."""
    if kind is typing.Any:
        return
    if isinstance(kind, typing.TypeVar):
        kind = (bound or {}).get(kind, kind.__bound__ or typing.Any)
        return check(value, kind, where, bound)
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            try:
                return check(value, arm, where, bound)
            except SchemaError:
                pass
        raise SchemaError(f"{where}: {value!r:.80} is none of {kind}")
    if kind is type(None):
        if value is not None:
            raise SchemaError(f"{where}: {value!r:.80} is not None")
        return
    td = origin if origin is not None else kind
    if typing_extensions.is_typeddict(td):
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: not an object")
        hints = typing.get_type_hints(td, vars(result_schema))
        if td is result_schema.EvalResults:
            # A task config holds lists and objects (metric_list, metadata) and integers
            # (num_fewshot) in lm-eval's own files: wider than the schema's annotation.
            hints["configs"] = dict[str, dict[str, typing.Any]]
        for key in td.__required_keys__:
            if key not in value:
                raise SchemaError(f"{where}: missing {key!r}")
        extra = getattr(td, "__extra_items__", typing_extensions.NoExtraItems)
        for key, v in value.items():
            if key in hints:
                check(v, hints[key], f"{where}.{key}", bound)
            elif extra is not typing_extensions.NoExtraItems:
                if key != OURS:
                    check(v, extra, f"{where}.{key}", bound)
            elif key != OURS:
                raise SchemaError(f"{where}: {key!r} is not in {td.__name__}")
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: not an object")
        for k, v in value.items():
            check(k, args[0], f"{where} key", bound)
            check(v, args[1], f"{where}.{k}", bound)
        return
    if origin is list:
        if not isinstance(value, list):
            raise SchemaError(f"{where}: not a list")
        for i, v in enumerate(value):
            check(v, args[0], f"{where}[{i}]", bound)
        return
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind in (str, bool, dict, list):
        ok = isinstance(value, kind)
    elif kind is tuple:
        ok = isinstance(value, list)
    else:
        raise SchemaError(f"{where}: the checker does not know {kind}")
    if not ok:
        raise SchemaError(f"{where}: {value!r:.80} is not {kind.__name__}")


class MultipleChoice:
    """The parts of a `ConfigurableTask` its `process_results` reads, for one sample: the
    choices are the continuations (`arg_1`; the task's target delimiter is empty), the target
    their index."""

    OUTPUT_TYPE = "multiple_choice"
    multiple_input = False
    multiple_target = False

    def __init__(self, sample, metrics):
        self.config = types.SimpleNamespace(process_results=None)
        self._metric_fn_list = {m: None for m in metrics}
        self.choices = [a["arg_1"] for a in sample["arguments"].values()]
        self.target = int(sample["target"])

    def doc_to_choice(self, doc):
        return self.choices

    def doc_to_target(self, doc):
        return self.target


def model(folder):
    files = [p.as_posix() for p in sorted(folder.iterdir())]
    results_files = utils.get_results_filenames(files)
    latest = utils.get_latest_filename(results_files)
    results = json.loads(Path(latest).read_text(encoding="utf-8"))
    check(results, result_schema.EvalResults, latest)
    table = utils.make_table(results)
    read = {"results": Path(latest).name, "table": table, "tasks": {}}
    for task, metrics in results["results"].items():
        samples_files = [
            f
            for f in utils.get_sample_results_filenames(files)
            if utils.get_file_task_name(Path(f).name) == task
        ]
        if not samples_files:
            raise SchemaError(f"{folder}: no samples file for task {task!r}")
        path = utils.get_latest_filename(samples_files)
        date = utils.get_file_datetime(Path(path).name)
        if date + ".json" != utils.get_file_datetime(Path(latest).name):
            raise SchemaError(f"{path}: date {date!r} is not the results file's")
        names = [m["metric"] for m in results["configs"][task]["metric_list"]]
        sums = {m: [] for m in names}
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            sample = json.loads(line)
            where = f"{path}:{n + 1}"
            check(sample, result_schema.SampleResult, where)
            if sample["doc_id"] != n:
                raise SchemaError(f"{where}: doc_id {sample['doc_id']} is not the line's")
            if sample["target"] == "None":
                continue
            # As lm-eval's evaluator hands them over: (log-likelihood, is_greedy) per choice.
            resps = [(float(ll), greedy == "True") for ll, greedy in sample["filtered_resps"]]
            if any(g not in ("True", "False") for _, g in sample["filtered_resps"]):
                raise SchemaError(f"{where}: is_greedy is not a Python bool's text")
            task_ = MultipleChoice(sample, names + ["exact_match"])
            got = ConfigurableTask.process_results(task_, sample["doc"], resps)
            for m in names:
                if got[m] != sample[m]:
                    raise SchemaError(f"{where}: lm-eval gives {m} {got[m]}, the file {sample[m]}")
                sums[m].append(got[m])
        for m in names:
            want = sum(sums[m]) / len(sums[m])
            if metrics[f"{m},none"] != want:
                raise SchemaError(f"{latest}: {task} {m} {metrics[m + ',none']} != mean {want}")
        read["tasks"][task] = {"samples": Path(path).name, "lines": len(lines)}
    return read


def main():
    root = Path(sys.argv[1])
    out = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        try:
            out[folder.name] = model(folder)
        except SchemaError as e:
            sys.exit(f"lm-eval does not read {folder}: {e}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
