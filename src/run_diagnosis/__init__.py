"""run_diagnosis: diagnose a language-model training run from its logs (the Python side of the project).

The dbt project (models/, macros/, tests/) does the diagnosis; this package reads logs into the
canonical five files (``run_diagnosis.importers``), runs dbt (``dbt_runner``, ``diagnose``,
``multi_run``) and writes the reports from the marts (``report`` and the ``report_*`` modules).
The commands are thin files in scripts/ (``python scripts/diagnose.py --help``); the package is
installed editable by scripts/bootstrap.sh, and finds the dbt project two folders above itself.
"""
