"""Wire protocols of the scripted model: one module per model API a harness speaks.

Each exposes matches(method, path), user_text(body), is_side_request(body) and
respond(reply, body) -> (status, headers, iterable of bytes chunks).
"""
