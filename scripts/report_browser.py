"""The command of run_diagnosis.report_browser (src/run_diagnosis/report_browser.py): --help for its usage."""

from run_diagnosis.report_browser import main

if __name__ == "__main__":
    raise SystemExit(main())
