"""``ksptrace run``: one instrumented run of a built-in problem (K forced iterations, each
stamped), the detours injected into it, and its trace written from all ranks.
"""
