"""The Kafka wire protocol, translated to and from the engine.

Pure: no sockets, no threads, no event loop (those live in ``lab.runtime.listeners``).
Bodies are read and written with kio, from Kafka's own message schemas; record batches
pass through as the engine's RecordBatch v2 bytes.

    framing.py   size-prefixed frames out of a byte stream
    codec.py     request header and body in, response header and body out
    apis.py      which APIs and versions a lab's broker serves, and their handlers
    connection.py one client connection on the engine's side: requests in order, answers back
"""
