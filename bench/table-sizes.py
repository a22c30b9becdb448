#!/usr/bin/python3
# Per-table LMDB page usage including DUP_SORT sub-databases (which mdb_stat does not count).
import struct, sys, mmap
F_BIGDATA, F_SUBDATA, F_DUPDATA = 1, 2, 4
P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 1, 2, 4, 8, 0x20
path = sys.argv[1] + "/data.mdb"
f = open(path, "rb"); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
def db(buf, off):
    pad, flags, depth, br, lf, ov, ent, root = struct.unpack_from("<IHHQQQQQ", buf, off)
    return dict(flags=flags, depth=depth, br=br, lf=lf, ov=ov, ent=ent, root=root)
PS = struct.unpack_from("<I", m, 40)[0]
metas = []
for p in (0, 1):
    base = p * PS + 16
    free = db(m, base + 24); main = db(m, base + 24 + 48)
    last_pg, txnid = struct.unpack_from("<QQ", m, base + 24 + 96)
    metas.append((txnid, main, free, last_pg))
txnid, main, free, last_pg = max(metas, key=lambda x: x[0])
def page(pg): return pg * PS
def walk(root, visit):
    if root == 0xFFFFFFFFFFFFFFFF: return
    stack = [root]
    while stack:
        pg = stack.pop(); o = page(pg)
        flags, lower, upper = struct.unpack_from("<HHH", m, o + 10)
        if flags & P_LEAF2: continue
        n = (lower - 16) // 2
        for i in range(n):
            noff = o + struct.unpack_from("<H", m, o + 16 + 2 * i)[0]
            lo, hi, nflags, ksize = struct.unpack_from("<HHHH", m, noff)
            if flags & P_BRANCH:
                stack.append(lo | (hi << 16) | (nflags << 32))
            else:
                key = bytes(m[noff + 8: noff + 8 + ksize]); data_off = noff + 8 + ksize
                visit(key, nflags, data_off, lo | (hi << 16))
tables = []
def top(key, nflags, doff, dsize):
    if nflags & F_SUBDATA: tables.append((key.decode(errors="replace"), db(m, doff)))
walk(main["root"], top)
tot = 0
print(f"{'table':16} {'main pages':>10} {'sub-db pages':>12} {'sub-dbs':>8} {'MiB':>7}")
for name, d in tables:
    sub = [0, 0]
    def visit(key, nflags, doff, dsize):
        if nflags & F_SUBDATA and nflags & F_DUPDATA:
            s = db(m, doff); sub[0] += s["br"] + s["lf"] + s["ov"]; sub[1] += 1
    if d["flags"] & 0x04: walk(d["root"], visit)
    mainp = d["br"] + d["lf"] + d["ov"]
    mib = (mainp + sub[0]) * PS / 2**20; tot += mainp + sub[0]
    print(f"{name:16} {mainp:10} {sub[0]:12} {sub[1]:8} {mib:7.1f}")
print(f"in tables {tot*PS/2**20:.1f} MiB; file high-water {(last_pg+1)*PS/2**20:.1f} MiB; freelist db pages {free['br']+free['lf']+free['ov']}")
