"""The studies over traces, one package each.

Each study is pure computation over numpy arrays and trace tables, plus the presentation of its
own results; it reads no communicator. The report (`ksptrace.report`) composes them. See
docs/architecture.md for the layers and where each kind of change goes.
"""
