"""The LangGraph compatibility suite (issue 11): each case is a LangGraph program run twice, with LangGraph's
imports and with graphq's (the map in :mod:`tests.compat.imports`), asserting the value LangGraph documents.
"""
