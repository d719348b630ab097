"""HTTP handlers: parse and validate, call one service method, map domain errors to HTTP."""
