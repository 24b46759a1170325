"""The client's stateless era (2026-07-28): probing for it, and requests with no session.

The modules are named for the protocol concept each implements, as in
:mod:`mcpkit.server.stateless` (which explains the scheme):

* :mod:`.discover`: ``server/discover`` as the era probe, the per-request envelope
  and the fallback to the handshake;
* :mod:`.input_required`: answering ``input_required`` results and retrying;
* :mod:`.listen`: one ``subscriptions/listen`` request per session for change
  notifications.
"""
