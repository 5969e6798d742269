"""The LangGraph compatibility suite: each case is a LangGraph program run twice, with LangGraph's
imports and with graphq's (the map in :mod:`tests.compat.imports`), asserting the value LangGraph documents.
"""
