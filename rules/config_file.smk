"""The default config, checked before Snakemake reads it: Snakemake's own loader answers a file
that is not UTF-8 (or unreadable) with a traceback that names no file (config_files.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from devicebench.plan.config_files import problem_of

# The Snakefile's configfile, in the working directory; named in full (the run may be elsewhere).
DEFAULT_CONFIG_FILE = Path("config/config.yaml").absolute()

if DEFAULT_CONFIG_FILE.exists() and (problem := problem_of(DEFAULT_CONFIG_FILE)):
    raise WorkflowError(problem)
