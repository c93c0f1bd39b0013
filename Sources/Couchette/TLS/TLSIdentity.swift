import CCrypto
import Foundation

/// A certificate chain and its private key: what a ``URLEndpointListener`` serves HTTPS with, and
/// what a ``ClientCertificateAuthenticator`` presents to a server.
///
/// ``createIdentity(commonName:expiration:)`` makes a self-signed one with an EC P-256 key: key
/// generation takes well under a millisecond (RSA 2048 takes tens to hundreds), handshakes are
/// cheaper, and every TLS 1.2+ client (libcurl, CouchDB's Erlang, browsers) accepts it.
///
/// ```swift
/// let identity = try TLSIdentity.createIdentity(commonName: "localhost")
/// print(identity.sha256Fingerprint)   // "3f9a…", what `couchette replicate --pin` takes
/// var config = URLEndpointListenerConfiguration(collections: [try db.defaultCollection()])
/// config.tlsIdentity = identity
/// ```
public struct TLSIdentity: Sendable {
    /// The certificates in DER, leaf first.
    public let certificates: [Data]
    /// When the leaf certificate stops being valid.
    public let expiration: Date
    /// The SHA-256 of the leaf certificate's DER, lowercase hex without separators.
    public let sha256Fingerprint: String
    /// The certificate chain in PEM, leaf first (what ``identity(certificatePEM:privateKeyPEM:)`` reads back).
    public let certificatePEM: Data
    /// The private key in unencrypted PKCS#8 PEM. Keep it secret: whoever holds it can be this identity.
    public let privateKeyPEM: Data

    /// Makes a self-signed certificate for `commonName` and a new EC P-256 key.
    ///
    /// - Parameters:
    ///   - commonName: the certificate's subject CN; a host name or IP address is also put in its
    ///     subject alternative names, so clients that trust it by CA file can check the host.
    ///   - expiration: the end of validity; nil means one year from now. A date in the past makes an
    ///     expired certificate (valid from a day before it), which tests use.
    /// - Throws: `.invalidParameter` for an empty common name, `.tls` when OpenSSL fails.
    public static func createIdentity(commonName: String, expiration: Date? = nil) throws -> TLSIdentity {
        guard !commonName.isEmpty, commonName.utf8.count <= 64 else {
            throw CouchetteError(.invalidParameter, "a certificate's common name must be 1 to 64 bytes, not '\(commonName.prefix(80))'")
        }
        let notAfter = expiration ?? Date().addingTimeInterval(365 * 86_400)
        let notBefore = min(Date().addingTimeInterval(-60), notAfter.addingTimeInterval(-86_400))
        let key = try generateKey()
        let certificate = try OpenSSLCertificate(X509_new(), "OpenSSL could not allocate a certificate")
        let x509 = certificate.pointer
        guard X509_set_version(x509, 2) == 1,  // v3
            setRandomSerial(x509),
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(x509, key.pointer) == 1,
            let name = X509_get_subject_name(x509),
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
            X509_set_issuer_name(x509, name) == 1,
            addSubjectAlternativeName(x509, commonName),
            X509_sign(x509, key.pointer, EVP_sha256()) > 0
        else {
            throw OpenSSL.error(.tls, "OpenSSL could not make a self-signed certificate for '\(commonName)'")
        }
        return try TLSIdentity(chain: [certificate], key: key)
    }

    /// Loads a certificate chain (leaf first) and its private key from PEM.
    ///
    /// The key may be PKCS#8 (`BEGIN PRIVATE KEY`) or a traditional RSA/EC key; encrypted keys are
    /// not supported.
    /// - Throws: `.invalidParameter` when either PEM cannot be read or the key does not belong to
    ///   the leaf certificate.
    public static func identity(certificatePEM: Data, privateKeyPEM: Data) throws -> TLSIdentity {
        let chain = try OpenSSL.certificates(pem: certificatePEM)
        guard let leaf = chain.first else {
            throw CouchetteError(.invalidParameter, "the certificate PEM holds no certificate (expected '-----BEGIN CERTIFICATE-----')")
        }
        let key = try OpenSSL.privateKey(pem: privateKeyPEM)
        guard X509_check_private_key(leaf.pointer, key.pointer) == 1 else {
            ERR_clear_error()
            throw CouchetteError(.invalidParameter, "the private key does not match the certificate")
        }
        return try TLSIdentity(chain: chain, key: key)
    }

    /// The certificates (DER, in order) in a PEM file of certificates without a key, such as a CA
    /// bundle for ``ReplicatorConfiguration/trustedRootCertificates``.
    /// - Throws: `.invalidParameter` when `pem` holds no certificate.
    public static func certificates(pem: Data) throws -> [Data] {
        let certificates = try OpenSSL.certificates(pem: pem)
        guard !certificates.isEmpty else {
            throw CouchetteError(.invalidParameter, "the PEM data holds no certificate (expected '-----BEGIN CERTIFICATE-----')")
        }
        return try certificates.map { try $0.der() }
    }

    private init(chain: [OpenSSLCertificate], key: OpenSSLKey) throws {
        certificates = try chain.map { try $0.der() }
        expiration = try chain[0].expiration()
        sha256Fingerprint = OpenSSL.sha256Hex(certificates[0])
        var pem = Data()
        for certificate in chain { pem += try certificate.pem() }
        certificatePEM = pem
        privateKeyPEM = try key.privatePEM()
    }

    private static func generateKey() throws -> OpenSSLKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSL.error(.tls, "OpenSSL could not set up EC key generation")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1
        else {
            EVP_PKEY_free(key)
            throw OpenSSL.error(.tls, "OpenSSL could not generate a P-256 key")
        }
        return try OpenSSLKey(key, "OpenSSL generated no key")
    }

    /// A random 127-bit positive serial number (RFC 5280: unique per issuer, at most 20 bytes).
    private static func setRandomSerial(_ x509: OpaquePointer) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { return false }
        bytes[0] &= 0x7f
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else { return false }
        defer { BN_free(number) }
        return BN_to_ASN1_INTEGER(number, X509_get_serialNumber(x509)) != nil
    }

    /// Adds `DNS:<name>` or `IP:<name>` when `name` is a host name or an address; other common
    /// names (with spaces, say) get no alternative name. Only these characters reach OpenSSL's
    /// configuration syntax, so a name cannot smuggle in a second entry.
    private static func addSubjectAlternativeName(_ x509: OpaquePointer, _ name: String) -> Bool {
        let isAddress =
            name.contains(":") ? IPv6Probe.isAddress(name) : name.allSatisfy { $0.isNumber || $0 == "." } && inet_addr(name) != INADDR_NONE
        let isHostName = name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
        guard isAddress || isHostName else { return true }
        let value = (isAddress ? "IP:" : "DNS:") + name
        guard let extensionPointer = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, value) else { return false }
        defer { X509_EXTENSION_free(extensionPointer) }
        return X509_add_ext(x509, extensionPointer, -1) == 1
    }
}

/// Whether a string is an IPv6 address in text form.
private enum IPv6Probe {
    static func isAddress(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }
}
