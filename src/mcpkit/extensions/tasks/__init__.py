"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): experimental.

SEP-2663 is a draft: the wire shapes here follow the ``modelcontextprotocol/ext-tasks``
repository's ``specification/draft/tasks.md`` and ``schema/draft/schema.json``, and
may change with it.

This step holds the foundation only, with no server or client part yet:

* :mod:`.states`: the task lifecycle as a table, and :func:`~.states.check_transition`;
* :mod:`.records`: :class:`~.records.TaskRecord` and its wire forms (``Task``,
  ``CreateTaskResult``, ``GetTaskResult``, the ``notifications/tasks`` params);
* :mod:`.store`: the :class:`~.store.TaskStore` protocol and
  :class:`~.store.MemoryTaskStore`;
* :mod:`.redis`: :class:`~.redis.RedisTaskStore`, the only module that imports redis.

The package sits in ``extensions`` (above ``server`` and ``client``, beside
``adapters``) and uses only ``stores`` (the Redis connection helpers) and ``errors``
below it; the core never imports it. docs/design/tasks.md says how the server and
client parts will build on it.
"""
