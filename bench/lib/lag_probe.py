"""Replication lag probe for bench/syncrepl-lag: writes a marker to one entry on the provider every 0.1 s
and polls the consumer until it shows the marker; prints the lag percentiles in milliseconds.

Usage: lag_probe.py PROVIDER_URL CONSUMER_URL BIND_DN PASSWORD ENTRY_DN SECONDS
"""

import sys
import time

import ldap


def main():
    provider_url, consumer_url, dn, password, entry, seconds = sys.argv[1:7]
    provider = ldap.initialize(provider_url)
    provider.simple_bind_s(dn, password)
    consumer = ldap.initialize(consumer_url)
    consumer.simple_bind_s(dn, password)
    lags = []
    missed = 0
    end = time.monotonic() + float(seconds)
    n = 0
    while time.monotonic() < end:
        n += 1
        marker = f"lag-probe-{n}-{time.time_ns()}".encode()
        provider.modify_s(entry, [(ldap.MOD_REPLACE, "carLicense", [marker])])
        acknowledged = time.monotonic()
        deadline = acknowledged + 10.0
        seen = False
        while time.monotonic() < deadline:
            found = consumer.search_s(entry, ldap.SCOPE_BASE, "(objectClass=*)", ["carLicense"])
            values = found[0][1].get("carLicense", []) if found else []
            if marker in values:
                lags.append((time.monotonic() - acknowledged) * 1000.0)
                seen = True
                break
            time.sleep(0.001)
        if not seen:
            missed += 1
        time.sleep(0.1)
    lags.sort()

    def pct(p):
        if not lags:
            return float("nan")
        return lags[min(len(lags) - 1, int(round(p / 100.0 * (len(lags) - 1))))]

    print(
        f"{len(lags)} markers, lag ms p50 {pct(50):.1f} p90 {pct(90):.1f} "
        f"p99 {pct(99):.1f} max {pct(100):.1f}, missed (>10 s) {missed}"
    )


if __name__ == "__main__":
    main()
