import CCrypto
import CCurl
import Foundation

/// Checks the server's certificate of one transfer when it is pinned or must be self-signed,
/// replacing OpenSSL's chain verification (`SSL_CTX_set_cert_verify_callback`), and remembers
/// why it refused one so the failure names the reason.
///
/// libcurl's `CURLOPT_PINNEDPUBLICKEY` pins a public key, but the contract pins a certificate
/// (Couchbase Lite's `pinnedServerCertificate`): the leaf's DER is compared here, and the key pin
/// is set as well — it is part of libcurl's connection-reuse key, so a connection verified for
/// one pin is never reused for a request with another.
///
/// Ownership: created with its ``CurlTransfer`` and used on the loop thread only (OpenSSL calls
/// back during `curl_multi_perform`); the transfer keeps it alive as long as the handle.
final class ServerCertificateCheck {
    let pinnedCertificate: Data?
    let pinnedFingerprint: String?
    let acceptOnlySelfSigned: Bool
    /// Why the last handshake's certificate was refused, if it was.
    private(set) var refusal: String?

    init(_ tls: HTTPClientTLS) {
        pinnedCertificate = tls.pinnedCertificate
        pinnedFingerprint = tls.pinnedFingerprint
        acceptOnlySelfSigned = tls.acceptOnlySelfSigned
    }

    /// `sha256//BASE64` of the pinned certificate's public key, for `CURLOPT_PINNEDPUBLICKEY`.
    static func publicKeyPin(of certificate: Data) throws -> String {
        let parsed = try OpenSSLCertificate(der: certificate)
        guard let key = X509_get0_pubkey(parsed.pointer) else {
            throw CouchetteError(.invalidParameter, "the pinned certificate has no public key")
        }
        let length = i2d_PUBKEY(key, nil)
        guard length > 0 else { throw OpenSSL.error(.invalidParameter, "the pinned certificate's public key could not be encoded") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        _ = bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(key, &cursor)
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var digestLength: UInt32 = 0
        EVP_Digest(bytes, bytes.count, &digest, &digestLength, EVP_sha256(), nil)
        return "sha256//" + Data(digest.prefix(Int(digestLength))).base64EncodedString()
    }

    /// Installs the check on libcurl's fresh `SSL_CTX` (the `CURLOPT_SSL_CTX_FUNCTION` callback).
    func install(on sslContext: OpaquePointer) {
        SSL_CTX_set_cert_verify_callback(sslContext, serverCertificateVerify, Unmanaged.passUnretained(self).toOpaque())
    }

    /// 1 to accept the chain in `store`, 0 to fail the handshake.
    fileprivate func verify(_ store: OpaquePointer) -> Int32 {
        guard let leaf = X509_STORE_CTX_get0_cert(store) else {
            return refuse(store, "the server sent no certificate", X509_V_ERR_UNSPECIFIED)
        }
        if let notAfter = X509_get0_notAfter(leaf), X509_cmp_current_time(notAfter) < 0 {
            return refuse(store, "the server's certificate has expired", X509_V_ERR_CERT_HAS_EXPIRED)
        }
        if pinnedCertificate != nil || pinnedFingerprint != nil {
            let length = i2d_X509(leaf, nil)
            var der = [UInt8](repeating: 0, count: Int(max(length, 0)))
            _ = der.withUnsafeMutableBufferPointer { buffer in
                var cursor = buffer.baseAddress
                return i2d_X509(leaf, &cursor)
            }
            let fingerprint = OpenSSL.sha256Hex(Data(der))
            let expected = pinnedFingerprint ?? pinnedCertificate.map { OpenSSL.sha256Hex($0) } ?? ""
            guard length > 0, pinnedCertificate.map({ Data(der) == $0 }) ?? true, fingerprint == expected else {
                return refuse(
                    store, "wrong pin: the server's certificate (SHA-256 \(fingerprint)) is not the pinned one (SHA-256 \(expected))",
                    X509_V_ERR_CERT_REJECTED)
            }
            return 1
        }
        // acceptOnlySelfSigned: issued by itself and signed by its own key.
        guard X509_check_issued(leaf, leaf) == X509_V_OK, let key = X509_get0_pubkey(leaf), X509_verify(leaf, key) == 1 else {
            ERR_clear_error()
            return refuse(
                store, "untrusted: the server's certificate is not self-signed (only self-signed certificates are accepted)",
                X509_V_ERR_CERT_REJECTED)
        }
        return 1
    }

    private func refuse(_ store: OpaquePointer, _ reason: String, _ code: Int32) -> Int32 {
        refusal = reason
        X509_STORE_CTX_set_error(store, code)
        return 0
    }
}

private func serverCertificateVerify(_ store: OpaquePointer?, _ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let store, let context else { return 0 }
    return Unmanaged<ServerCertificateCheck>.fromOpaque(context).takeUnretainedValue().verify(store)
}

/// The `CURLOPT_SSL_CTX_FUNCTION` callback: `context` is the transfer's unretained check.
func curlInstallServerCertificateCheck(
    _ handle: UnsafeMutableRawPointer?, _ sslContext: UnsafeMutableRawPointer?,
    _ context: UnsafeMutableRawPointer?
) -> CURLcode {
    guard let sslContext, let context else { return CURLE_SSL_CERTPROBLEM }
    Unmanaged<ServerCertificateCheck>.fromOpaque(context).takeUnretainedValue().install(on: OpaquePointer(sslContext))
    return CURLE_OK
}
