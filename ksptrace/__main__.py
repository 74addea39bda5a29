from ksptrace.cli.main import entry

entry()
