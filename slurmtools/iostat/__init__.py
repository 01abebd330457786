"""Stage 8, checkpoint and NFS I/O: the NFS client's own counters (/proc/self/mountstats) read per mount and
window, turned into throughput, round-trip and RPC queueing figures, and a verdict on what limits a mount (the
client's RPC slots, the server or the network) with the mount options and settings to look at.
"""
