"""Cluster-wide housekeeping loops run by one active instance (:mod:`.loops`): the reaper and request
expiry."""
