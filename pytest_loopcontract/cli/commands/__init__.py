"""One module per sub-command: a function of plain arguments that returns the exit code.

The argument parsing lives in :mod:`pytest_loopcontract.cli.parser` and the translation from
parsed arguments to these calls in :mod:`pytest_loopcontract.cli.main`; a command raises a
:class:`~pytest_loopcontract.errors.LoopContractError` to refuse, and never prints errors itself.
"""
