"""Checkers written for the embedded judge, one module per problem.

A checker module has `prepare(input: bytes) -> object` (parse a test input
once) and `check(prepared, output: bytes) -> CheckResult`.
"""
