import CCrypto
import Foundation

/// An OpenSSL `X509` this Swift value owns: freed when the last reference goes, whatever path
/// the caller leaves by.
final class OpenSSLCertificate {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer` (nil: throws `.tls` with OpenSSL's reason for `what`).
    init(_ pointer: OpaquePointer?, _ what: @autoclosure () -> String) throws {
        guard let pointer else { throw OpenSSL.error(.tls, what()) }
        self.pointer = pointer
    }

    /// Parses one DER certificate.
    convenience init(der: Data) throws {
        let parsed: OpaquePointer? = der.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_X509(nil, &cursor, raw.count)
        }
        try self.init(parsed, "a DER certificate could not be parsed")
    }

    deinit { X509_free(pointer) }

    /// The certificate in DER.
    func der() throws -> Data {
        let length = i2d_X509(pointer, nil)
        guard length > 0 else { throw OpenSSL.error(.tls, "a certificate could not be encoded as DER") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509(pointer, &cursor)
        }
        guard written == length else { throw OpenSSL.error(.tls, "a certificate could not be encoded as DER") }
        return Data(bytes)
    }

    /// The certificate in PEM (`-----BEGIN CERTIFICATE-----`).
    func pem() throws -> Data {
        try OpenSSL.writingToMemory("a certificate could not be encoded as PEM") { PEM_write_bio_X509($0, pointer) }
    }

    /// The end of the validity period (`notAfter`).
    func expiration() throws -> Date {
        var time = tm()
        guard let notAfter = X509_get0_notAfter(pointer), ASN1_TIME_to_tm(notAfter, &time) == 1 else {
            throw OpenSSL.error(.invalidParameter, "the certificate's expiration date could not be read")
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&time)))
    }
}

/// An OpenSSL `EVP_PKEY` this Swift value owns.
final class OpenSSLKey {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer?, _ what: @autoclosure () -> String) throws {
        guard let pointer else { throw OpenSSL.error(.tls, what()) }
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    /// The private key in unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    func privatePEM() throws -> Data {
        try OpenSSL.writingToMemory("a private key could not be encoded as PEM") {
            PEM_write_bio_PrivateKey($0, pointer, nil, nil, 0, nil, nil)
        }
    }
}

/// Small helpers around OpenSSL's memory BIOs and error queue.
enum OpenSSL {
    /// A `CouchetteError` whose message ends with OpenSSL's reason (the queue is emptied).
    static func error(_ code: CouchetteError.Code, _ message: String) -> CouchetteError {
        var reasons: [String] = []
        while case let failure = ERR_get_error(), failure != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(failure, &buffer, buffer.count)
            if reasons.count < 4 {
                reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return CouchetteError(code, reasons.isEmpty ? message : "\(message) (\(reasons.joined(separator: "; ")))")
    }

    /// Runs `write` into a fresh memory BIO and returns what it wrote.
    static func writingToMemory(_ what: String, _ write: (OpaquePointer) -> Int32) throws -> Data {
        guard let bio = BIO_new(BIO_s_mem()) else { throw error(.tls, what) }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw error(.tls, what) }
        let pending = BIO_ctrl_pending(bio)
        guard pending > 0, pending < Int32.max else { throw error(.tls, what) }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = BIO_read(bio, &bytes, Int32(pending))
        guard read == Int32(pending) else { throw error(.tls, what) }
        return Data(bytes)
    }

    /// Calls `body` with a read-only memory BIO over `data`.
    static func readingFromMemory<T>(_ data: Data, _ body: (OpaquePointer) throws -> T) throws -> T {
        guard data.count < Int32.max else { throw CouchetteError(.invalidParameter, "PEM data of \(data.count) bytes is too large") }
        return try data.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count)) else {
                throw error(.tls, "OpenSSL could not read from memory")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// Every certificate in `pem`, in order; empty when there is none.
    static func certificates(pem: Data) throws -> [OpenSSLCertificate] {
        try readingFromMemory(pem) { bio in
            var certificates: [OpenSSLCertificate] = []
            while let certificate = PEM_read_bio_X509(bio, nil, refusePassword, nil) {
                certificates.append(try OpenSSLCertificate(certificate, ""))
            }
            ERR_clear_error()  // the read that ended the loop queued "no start line"
            return certificates
        }
    }

    /// The private key in `pem` (PKCS#8, or traditional RSA/EC); encrypted keys are refused.
    static func privateKey(pem: Data) throws -> OpenSSLKey {
        try readingFromMemory(pem) { bio in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, refusePassword, nil) else {
                throw error(.invalidParameter, "the private key PEM could not be read (not a PEM private key, or encrypted)")
            }
            return try OpenSSLKey(key, "")
        }
    }

    /// Lowercase hex SHA-256 of `data`.
    static func sha256Hex(_ data: Data) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = data.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha256(), nil) }
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    /// A PEM password callback that supplies none: an encrypted key fails instead of OpenSSL's
    /// default callback prompting on the terminal.
    static let refusePassword: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
        _, _, _, _ in 0
    }
}
