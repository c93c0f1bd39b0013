import Foundation
import Testing

@testable import Couchette

/// TLSIdentity: self-signed identities made with OpenSSL, PEM loading, and the checks on bad input.
@Suite struct TLSIdentityTests {
    @Test func createdIdentityIsSelfSignedWithTheRequestedExpiration() throws {
        let expiration = Date().addingTimeInterval(30 * 86_400)
        let identity = try TLSIdentity.createIdentity(commonName: "localhost", expiration: expiration)
        #expect(identity.certificates.count == 1)
        #expect(abs(identity.expiration.timeIntervalSince(expiration)) < 1.5)
        #expect(identity.sha256Fingerprint.count == 64 && identity.sha256Fingerprint.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(identity.sha256Fingerprint == OpenSSL.sha256Hex(identity.certificates[0]))
        #expect(String(decoding: identity.certificatePEM, as: UTF8.self).hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(String(decoding: identity.privateKeyPEM, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // Default: one year. Two identities never share a key or a certificate.
        let other = try TLSIdentity.createIdentity(commonName: "localhost")
        #expect(abs(other.expiration.timeIntervalSinceNow - 365 * 86_400) < 5)
        #expect(other.sha256Fingerprint != identity.sha256Fingerprint && other.privateKeyPEM != identity.privateKeyPEM)
    }

    @Test func pemRoundTripKeepsTheCertificate() throws {
        let created = try TLSIdentity.createIdentity(commonName: "127.0.0.1")
        let loaded = try TLSIdentity.identity(certificatePEM: created.certificatePEM, privateKeyPEM: created.privateKeyPEM)
        #expect(loaded.certificates == created.certificates)
        #expect(loaded.sha256Fingerprint == created.sha256Fingerprint)
        #expect(loaded.expiration == created.expiration)
    }

    @Test func opensslCommandLineAgrees() async throws {
        // The `openssl` tool (from the same libssl) reads our certificate and computes the same fingerprint.
        let identity = try TLSIdentity.createIdentity(commonName: "couchette.test")
        let directory = try TemporaryDirectory()
        let file = URL(fileURLWithPath: directory.path + "/" + "cert.pem")
        try identity.certificatePEM.write(to: file)
        let output = try await runCommand(
            "/usr/bin/openssl", ["x509", "-in", file.path, "-noout", "-fingerprint", "-sha256", "-subject", "-ext", "subjectAltName"])
        let colonless = output.lowercased().replacingOccurrences(of: ":", with: "")
        #expect(colonless.contains(identity.sha256Fingerprint))
        #expect(output.contains("CN = couchette.test") && output.contains("DNS:couchette.test"))
    }

    @Test func loadsTraditionalKeysAndChains() async throws {
        let directory = try TemporaryDirectory()
        let key = (directory.path + "/" + "key.pem")
        let cert = (directory.path + "/" + "cert.pem")
        // A traditional ("BEGIN RSA PRIVATE KEY") RSA key from the openssl tool.
        _ = try await runCommand(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                "-days", "2", "-subj", "/CN=rsa.test",
            ])
        _ = try await runCommand("/usr/bin/openssl", ["rsa", "-in", key, "-out", key + ".trad", "-traditional"])
        let traditional = try Data(contentsOf: URL(fileURLWithPath: key + ".trad"))
        #expect(String(decoding: traditional, as: UTF8.self).hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        let certificatePEM = try Data(contentsOf: URL(fileURLWithPath: cert))
        let identity = try TLSIdentity.identity(certificatePEM: certificatePEM, privateKeyPEM: traditional)
        #expect(identity.expiration.timeIntervalSinceNow > 86_400 && identity.expiration.timeIntervalSinceNow < 3 * 86_400)
        // A chain: leaf first, then another certificate.
        let issuer = try TLSIdentity.createIdentity(commonName: "issuer.test")
        let chained = try TLSIdentity.identity(certificatePEM: certificatePEM + issuer.certificatePEM, privateKeyPEM: traditional)
        #expect(chained.certificates.count == 2 && chained.certificates[1] == issuer.certificates[0])
        #expect(chained.sha256Fingerprint == identity.sha256Fingerprint)
    }

    @Test func badInputIsRefusedClearly() async throws {
        let identity = try TLSIdentity.createIdentity(commonName: "localhost")
        let stranger = try TLSIdentity.createIdentity(commonName: "localhost")
        await expectCouchetteError(.invalidParameter) {
            _ = try TLSIdentity.identity(certificatePEM: Data("garbage".utf8), privateKeyPEM: identity.privateKeyPEM)
        }
        await expectCouchetteError(.invalidParameter) {
            _ = try TLSIdentity.identity(
                certificatePEM: identity.certificatePEM,
                privateKeyPEM: Data("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8))
        }
        let mismatch = #expect(throws: CouchetteError.self) {
            _ = try TLSIdentity.identity(certificatePEM: identity.certificatePEM, privateKeyPEM: stranger.privateKeyPEM)
        }
        #expect(mismatch?.code == .invalidParameter && mismatch?.message.contains("does not match") == true)
        await expectCouchetteError(.invalidParameter) { _ = try TLSIdentity.createIdentity(commonName: "") }
        // An encrypted key is refused, not prompted for on the terminal.
        let directory = try TemporaryDirectory()
        let plain = URL(fileURLWithPath: directory.path + "/" + "plain.pem")
        try identity.privateKeyPEM.write(to: plain)
        let encrypted = (directory.path + "/" + "encrypted.pem")
        _ = try await runCommand("/usr/bin/openssl", ["pkey", "-in", plain.path, "-out", encrypted, "-aes256", "-passout", "pass:secret"])
        await expectCouchetteError(.invalidParameter) {
            _ = try TLSIdentity.identity(
                certificatePEM: identity.certificatePEM, privateKeyPEM: try Data(contentsOf: URL(fileURLWithPath: encrypted)))
        }
    }

    @Test func expiredIdentitiesCanBeMade() throws {
        let past = Date().addingTimeInterval(-3600)
        let expired = try TLSIdentity.createIdentity(commonName: "localhost", expiration: past)
        #expect(expired.expiration < Date())
    }
}

/// Runs a command to completion and returns its standard output (standard error is discarded).
/// Started through ``startProcess(_:)``: `Process.run()` itself crashed here once the parallel
/// suite held more than about 1,350 descriptors (see there).
func runCommand(_ path: String, _ arguments: [String]) async throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try await startProcess(process)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    await waitForExit(process)
    guard process.terminationStatus == 0 else {
        throw CouchetteError(.io, "\(path) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self)
}
