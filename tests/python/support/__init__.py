"""Test helpers of tests/python (not test files: pytest collects only test_*.py).

The test files import them as `support.<module>`: pytest (rootdir conftest, the default
"prepend" import mode) puts tests/python on sys.path, where `support` is this package.
"""
