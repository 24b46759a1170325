"""Queue-fed SSE streams of Streamable HTTP: the standalone GET stream and resumption.

:func:`open_stream` serves a GET: with ``Last-Event-ID`` and an event store it
replays the stream that id belongs to (only a stream of the asking session)
and then continues it live; otherwise it opens the session's standalone
stream. :func:`pump` writes such a stream with keep-alive pings until it
ends, the client leaves or the server stops. The state they use lives in
:mod:`.http_sessions` (:class:`~.http_sessions.HTTPSession`) and
:mod:`.http_request_streams` (:class:`~.http_request_streams.RequestStream`,
the queues that feed these streams).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..errors import INVALID_REQUEST
from ..protocol import jsonrpc
from .asgi import PING, SSE_HEADERS, Receive, Send, send_error, sse_event, watch_disconnect
from .http_request_streams import CLOSE, FINAL, GONE, RequestStream, StreamQueue, StreamSettings
from .http_sessions import HTTPSession

if TYPE_CHECKING:
    from .cluster import ClusterNode

__all__ = ["open_stream", "pump"]


async def pump(
    settings: StreamSettings,
    send: Send,
    receive: Receive,
    queue: StreamQueue,
    replay: list[tuple[str, dict[str, Any]]],
    seen: set[str],
) -> None:
    """Write a queue-fed SSE stream until it ends, the client leaves or the server stops.

    ``replay`` is written first; queued events whose id is in ``seen`` were
    part of it and are skipped.
    """
    await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
    watcher = asyncio.ensure_future(watch_disconnect(receive, queue, GONE))
    tail = b""
    try:
        for event_id, message in replay:
            chunk = sse_event(jsonrpc.dumps(message), event_id)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        interval = settings.keepalive_interval
        while True:
            try:
                async with asyncio.timeout(interval):
                    item = await queue.get()
            except TimeoutError:
                await send({"type": "http.response.body", "body": PING, "more_body": True})
                continue
            if type(item) is tuple:
                event_id, data = item
                queue.nbytes -= len(data)
                if event_id is not None and event_id in seen:
                    continue
                chunk = sse_event(data, event_id)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                continue
            if item == CLOSE:
                tail = settings.retry_field
            break
    except OSError:  # the client went away mid-write
        pass
    finally:
        watcher.cancel()
    try:
        await send({"type": "http.response.body", "body": tail, "more_body": False})
    except Exception:
        pass


async def open_stream(
    settings: StreamSettings,
    entry: HTTPSession,
    last_event_id: str | None,
    receive: Receive,
    send: Send,
) -> None:
    """Serve a GET: resume the stream ``last_event_id`` belongs to, else the standalone one."""
    if last_event_id is not None and settings.event_store is not None:
        if await _replay_stream(settings, entry, last_event_id, receive, send):
            return
    if entry.get_queue is not None:
        await _conflict(send)
        return
    queue = StreamQueue(settings.max_queued_bytes)
    entry.get_queue = queue
    entry.listened = True
    cluster = settings.cluster
    try:
        if cluster is not None:
            await cluster.hold(entry)  # messages raised on any node now come here
        await pump(settings, send, receive, queue, [], set())
    finally:
        if entry.get_queue is queue:
            entry.get_queue = None
            if cluster is not None:
                await cluster.release(entry)


async def _conflict(send: Send) -> None:
    # One standalone stream per session: messages are sent on one stream only (transports §
    # multiple connections), so a second listener would silently get nothing.
    await send_error(
        send, 409, INVALID_REQUEST, "Conflict: this session already has a GET stream open"
    )


async def _replay_stream(
    settings: StreamSettings, entry: HTTPSession, last_event_id: str, receive: Receive, send: Send
) -> bool:
    """GET + Last-Event-ID: replay the stream after that id, then continue it live.

    Returns False when the id names no stream of this session (the caller
    then opens a plain standalone stream).
    """
    store = settings.event_store
    assert store is not None
    replay: list[tuple[str, dict[str, Any]]] = []

    async def collect(event_id: str, message: dict[str, Any]) -> None:
        replay.append((event_id, message))

    # Replay into a buffer first: only once the store names the stream can we check that
    # it belongs to this session (transports § resumability: never replay another stream).
    stream_id = await store.replay_events_after(last_event_id, collect)
    if stream_id is None or not entry.owns(stream_id):
        return False
    queue = StreamQueue(settings.max_queued_bytes)
    cluster = settings.cluster
    foreign = cluster.foreign(stream_id) if cluster is not None else None
    if foreign is not None:
        assert cluster is not None
        await _follow_stream(
            settings, cluster, foreign, stream_id, last_event_id, replay, queue, receive, send
        )
        return True
    live: RequestStream | None = None
    attached = True
    if stream_id == entry.standalone_id:
        # A resume proves the client lost its stream, even if the server has not noticed
        # yet (a half-open connection): the new connection takes over, no 409.
        if entry.get_queue is not None:
            entry.get_queue.put_nowait(CLOSE)
        entry.get_queue = queue
        if cluster is not None:
            await cluster.hold(entry)  # then replay again: nothing falls in between
    else:
        live = entry.streams.get(stream_id) if entry.streams else None
        if live is None or live.done:
            live = None
            attached = False
            queue.put_nowait(FINAL)
        else:
            previous = live.resumer
            live.resumer = queue  # from now on the request's messages come here
            if previous is not None:
                previous.put_nowait(CLOSE)
            # One connection per stream: if the POST's own connection is somehow still
            # open, end it.
            await live.write(settings.retry_field, False)
    if attached:
        # Events stored between the replay and the takeover: replay again, deduplicated.
        await store.replay_events_after(replay[-1][0] if replay else last_event_id, collect)
    seen = {event_id for event_id, _ in replay}
    try:
        await pump(settings, send, receive, queue, replay, seen)
    finally:
        if live is not None and live.resumer is queue:
            live.resumer = None
        if entry.get_queue is queue:
            entry.get_queue = None
            if cluster is not None:
                await cluster.release(entry)
    return True


async def _follow_stream(
    settings: StreamSettings,
    cluster: ClusterNode,
    foreign: tuple[str, Any],
    stream_id: str,
    last_event_id: str,
    replay: list[tuple[str, dict[str, Any]]],
    queue: StreamQueue,
    receive: Receive,
    send: Send,
) -> None:
    """Resume a request stream another node runs: its logged events, then the rest as that
    node logs them (:meth:`ClusterNode.follow`), until the response."""
    if replay and "method" not in replay[-1][1]:
        queue.put_nowait(FINAL)  # the response is in the log: the request is over
        await pump(settings, send, receive, queue, replay, set())
        return
    after = replay[-1][0] if replay else last_event_id
    owner, rid = foreign
    follower = asyncio.ensure_future(cluster.follow(stream_id, after, owner, rid, queue))
    try:
        await pump(settings, send, receive, queue, replay, set())
    finally:
        follower.cancel()
