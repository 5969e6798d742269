"""The worker process (:mod:`.rq_worker`, an RQ worker taking step jobs) and the supervising process of
``graphq worker`` (:mod:`.supervisor`)."""
