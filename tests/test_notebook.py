"""The notebooks run top to bottom."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def run(name: str, folder: Path) -> str:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs)


def test_threshold_selection_notebook_runs(tmp_path):
    text = run("threshold_selection.ipynb", tmp_path)
    assert "closest to the humans by Spearman rho" in text and "report.html" in text


def test_judge_upgrade_audit_notebook_runs(tmp_path):
    text = run("judge_upgrade_audit.ipynb", tmp_path)
    assert "non-inferior - change in spearman" in text and "inconclusive -> exit code 1" in text
    assert "worse on other statistics - change in spearman" in text  # the family switch: AUC and alpha fell
    assert "verdict flips" in text and (tmp_path / "audit-report" / "report.html").is_file()
