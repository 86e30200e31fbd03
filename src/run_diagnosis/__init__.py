"""run_diagnosis: diagnose a language-model training run from its logs (the Python side of the project).

The dbt project (models/, macros/, tests/) does the diagnosis; this package reads logs into the
canonical five files (``run_diagnosis.importers``), runs dbt (``dbt_runner``, ``diagnose``,
``multi_run``) and writes the reports from the marts (``report`` and the ``report_*`` modules).
The commands are one console script, ``run-diagnosis SUBCOMMAND`` (``run_diagnosis.cli``;
``run-diagnosis --help``). The package finds the dbt project through ``run_diagnosis.project``
(RUN_DIAGNOSIS_PROJECT_DIR, else the checkout it is installed from). docs/packaging.md.
"""
