import CCivetWeb
import CCrypto
import Foundation

/// Makes Debian's civetweb 1.15 safe to serve HTTPS with OpenSSL 3.
///
/// Debian builds civetweb for the OpenSSL 1.1 API and lets it `dlopen("libssl.so")` at run time
/// (the name only libssl-dev provides). It then looks up `SSL_get_peer_certificate`, which
/// OpenSSL 3 renamed `SSL_get1_peer_certificate` (same semantics: a new reference the caller
/// frees) — the lookup fails silently, and every HTTPS connection then calls a NULL function
/// pointer in a civetweb worker, crashing the process.
///
/// So once per process: `mg_init_library(MG_FEATURES_TLS)` loads civetweb's TLS library and keeps
/// it loaded (no later `mg_start`/`mg_stop` reloads it), then the one empty slot of civetweb's
/// table of OpenSSL functions — found by its entry name in civetweb's writable data, next to a
/// well-formed neighbour — is filled with OpenSSL 3's `SSL_get1_peer_certificate`. If the table
/// is not found in exactly that shape (another civetweb build), nothing is written and HTTPS is
/// refused with `.tls` rather than risking the crash.
enum CivetWebTLS {
    /// Nil when HTTPS is usable, else why not.
    static let problem: String? = prepare()

    private static func prepare() -> String? {
        guard mg_check_feature(UInt32(MG_FEATURES_TLS)) != 0 else { return "this civetweb was built without TLS" }
        // Its return value is 0 here even when it loaded OpenSSL (it counts the missing function
        // as an error); the function table below is the real test.
        _ = mg_init_library(UInt32(MG_FEATURES_TLS))
        guard SSL_get_peer_certificate_missing() else { return nil }
        return repair()
            ? nil
            : "civetweb did not load OpenSSL, or its function table could not be repaired (it opens libssl.so and libcrypto.so at run time: install libssl-dev)"
    }

    /// Fills the empty `SSL_get_peer_certificate` slot again if civetweb reloaded its table (also
    /// called after each HTTPS start). True when the slot holds a function.
    @discardableResult
    static func repair() -> Bool {
        SSL_get_peer_certificate_missing() ? patchPeerCertificateLookup() : true
    }

    /// Whether OpenSSL lacks the 1.1 name (OpenSSL 3 does): nothing to repair otherwise.
    private static func SSL_get_peer_certificate_missing() -> Bool {
        guard let handle = dlopen(nil, RTLD_NOW) else { return true }
        defer { dlclose(handle) }
        return dlsym(handle, "SSL_get_peer_certificate") == nil
    }

    private struct Segment { let start: UInt; let end: UInt; let writable: Bool }

    /// civetweb's mapped segments, from `/proc/self/maps`.
    private static func civetwebSegments() -> [Segment] {
        // Read to EOF: procfs files report a size of 0, which whole-file readers trust.
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/maps"), let bytes = try? handle.readToEnd() else { return [] }
        try? handle.close()
        let maps = String(decoding: bytes, as: UTF8.self)
        return maps.split(separator: "\n").compactMap { line -> Segment? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].contains("libcivetweb.so"), fields[1].hasPrefix("r") else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else { return nil }
            return Segment(start: start, end: end, writable: fields[1].dropFirst().hasPrefix("w"))
        }
    }

    private static func patchPeerCertificateLookup() -> Bool {
        let segments = civetwebSegments()
        func inside(_ address: UInt, _ length: UInt) -> Bool {
            segments.contains { address >= $0.start && address + length <= $0.end }
        }
        func name(at address: UInt) -> String? {
            guard address != 0, inside(address, 1) else { return nil }
            var bytes: [UInt8] = []
            var cursor = address
            while inside(cursor, 1), bytes.count < 64 {
                let byte = UnsafePointer<UInt8>(bitPattern: cursor)!.pointee
                if byte == 0 { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
                cursor += 1
            }
            return nil
        }
        let wordSize = UInt(MemoryLayout<UInt>.size)
        let replacement = UInt(
            bitPattern: unsafeBitCast(
                SSL_get1_peer_certificate as @convention(c) (OpaquePointer?) -> OpaquePointer?,
                to: UnsafeRawPointer.self))
        for segment in segments where segment.writable {
            var address = (segment.start + wordSize - 1) & ~(wordSize - 1)
            while address + wordSize <= segment.end {
                let word = UnsafePointer<UInt>(bitPattern: address)!.pointee
                if word != 0, name(at: word) == "SSL_get_peer_certificate" {
                    // Entries are {name, function} or {name, flags, function}: the layout whose
                    // previous entry is a named, loaded function wins.
                    for stride in [2 * wordSize, 3 * wordSize] where address >= segment.start + stride {
                        let slot = address + stride - wordSize
                        let previousName = UnsafePointer<UInt>(bitPattern: address - stride)!.pointee
                        let previousFunction = UnsafePointer<UInt>(bitPattern: slot - stride)!.pointee
                        guard inside(slot, wordSize), name(at: previousName)?.hasPrefix("SSL_") == true, previousFunction != 0 else {
                            continue
                        }
                        let current = UnsafePointer<UInt>(bitPattern: slot)!.pointee
                        if current == replacement { return true }
                        guard current == 0 else { continue }
                        UnsafeMutablePointer<UInt>(bitPattern: slot)!.pointee = replacement
                        return true
                    }
                }
                address += wordSize
            }
        }
        return false
    }
}
