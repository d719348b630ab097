"""Execution output: the bounded OutputSink, the sanitizer and the artifact store it spills to."""
