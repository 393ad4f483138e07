"""Export a trained classifier for use outside xlt: sentence-transformers, transformers, xlt's own loader.

    python jobs/export.py results/finetune/sib200-e5-zero-shot results/export/sib200
    python jobs/export.py results/cotrain/demo results/export/demo --learner classifier
    python jobs/export.py results/sweeps/scl results/export/scl     # the sweep's best trial
    python jobs/export.py results/finetune/sib200-e5-zero-shot results/export/sib200 --onnx   # + onnx/*.onnx
    python jobs/export.py --smoke         # the fine-tuning smoke run's model (or the one given), to results/smoke/export

The model: a run's output directory, whose record (``run.json``) names the classifiers it produced:
``--learner`` picks one (default: the record's own; a co-training run's ``lm``, ``emb`` or ``classifier``; a
study's unit by name; ``xlt.predict.models``). Training jobs
export at their end with ``--set output.export=true`` (``jobs/sweep.py --export``). The export directory loads as ``SentenceTransformer(dir)`` (the encoder, with its
pooling and prefix) and ``xlt.models.Classifier.from_pretrained(dir)`` (the classifier), and holds a
model card, ``README.md``: task, labels, languages, the scores its run reported, the config. With ``--onnx``
the encoder as ONNX too, in sentence-transformers' layout (``onnx/model.onnx``, fp32, and ``onnx/model_qint8.onnx``,
dynamic int8), which ``jobs/predict.py --set model.backend=onnx`` (or ``onnx-int8``) labels with on CPU workers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xlt.cli import run_job

SMOKE = ("results/smoke/finetune_sib200", "results/smoke/export")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", help="a run's output directory (fine-tuning, co-training, sweep, study)")
    parser.add_argument("directory", nargs="?", help="where the export goes (created)")
    parser.add_argument("--learner", metavar="NAME",
                        help="which classifier of the run's record (default: the record's own; a co-training run's "
                             "lm, emb or classifier; of a co-training sweep, the learner it scored with)")
    parser.add_argument("--onnx", action="store_true",
                        help="the encoder as ONNX too, fp32 and int8, for jobs/predict.py --set model.backend=onnx "
                             "(or onnx-int8) on CPU workers (needs xlt[onnx])")
    parser.add_argument("--smoke", action="store_true", help="the fine-tuning smoke run's model (jobs/finetune.py --smoke)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.add_argument("--dry-run", action="store_true",
                        help="find the run's record and the classifier it names, print the plan; write nothing")
    args = parser.parse_args()
    # After the arguments: --help answers before torch is imported.
    from xlt.export import export_model
    from xlt.logs import quiet_libraries

    quiet_libraries()
    model, directory = (args.model or SMOKE[0], args.directory or SMOKE[1]) if args.smoke else (args.model, args.directory)
    if not model or not directory:
        parser.error("give the model and the export directory (or --smoke)")
    if args.dry_run:
        return plan(model, directory, args.learner, args.onnx)
    out = export_model(model, directory, args.learner, onnx=args.onnx)
    print(f"exported {model} to {out}\n"
          f"  SentenceTransformer('{out}')  |  xlt.models.Classifier.from_pretrained('{out}')  |  {out}/README.md")


def plan(model: str, directory: str, learner: str | None, onnx: bool) -> None:
    """``--dry-run``: the classifier the run's record names and where its export would go."""
    from xlt.cli import dry_run
    from xlt.inference.entries import is_export, lookup

    if is_export(model):
        raise ValueError(f"{model} is an export already: copy the directory, or export the run it came from")
    record, entry, _ = lookup(model, learner)
    state = "exists, and the export replaces it" if Path(directory).exists() else "new"
    dry_run("export", directory, state, None, {
        "model": f"{model}: its {record['job']} run's {learner or record['default']} ({entry.get('what', 'classifier')})",
        "plan": "the classifier, its model card" + (", its encoder as ONNX (fp32, int8)" if onnx else ""),
    })


if __name__ == "__main__":
    run_job(main)
