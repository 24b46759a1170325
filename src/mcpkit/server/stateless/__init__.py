"""The server's stateless era (2026-07-28): what serving a request with no session needs.

2026-07-28 removed the handshake and the session: each request carries its own
envelope and stands alone. The code calls that era ``stateless``
(``revision.era == "stateless"``), so its modules live here, beside the core they
plug into, and each is named for the protocol concept it implements, in the
specification's own words:

* :mod:`.dispatch`: serving one stateless request with the ordinary handlers
  (and answering ``server/discover``);
* :mod:`.input_required`: ``input_required`` results (MRTR, SEP-2322), the
  stateless stand-in for server-to-client requests;
* :mod:`.request_state`: the signed ``requestState`` those results carry;
* :mod:`.input_options`: ``InputRoundOptions``, how a server runs those rounds;
* :mod:`.listen`: ``subscriptions/listen``, the era's one long-lived request;
* :mod:`.cache_hints`: the ``ttlMs``/``cacheScope`` hints of list and read results
  (``CacheHint``, and ``CacheOptions``, a server's hints);
* :mod:`.mcp_header`: tool arguments mirrored into ``Mcp-Param-*`` headers.

The same scheme holds outside ``server/``: a package with several stateless-era
modules has a ``stateless`` subpackage (:mod:`mcpkit.client.stateless`); a single
one is named for its concept (:mod:`mcpkit.stores.input_required`) or, beside its
handshake-era counterpart, carries the era's name
(:mod:`mcpkit.transports.streamable_http_stateless`). Nothing is named for the
revision's date: a later revision of the same era keeps these names.
"""
