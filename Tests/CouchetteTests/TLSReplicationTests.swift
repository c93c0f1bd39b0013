import Foundation
import Testing

@testable import Couchette

/// Replication over HTTPS on loopback: a pinned listener, a client certificate, and certificate
/// failures that stop the replicator at once instead of retrying.
@Suite(.serialized, .tags(.concurrency)) struct TLSReplicationTests {
    private func tlsConfig(_ local: Database, _ listener: URLEndpointListener, _ type: ReplicatorType) throws -> ReplicatorConfiguration {
        var config = ReplicatorConfiguration(target: URLEndpoint(url: listener.urls[0]))
        config.addCollection(try local.defaultCollection())
        config.replicatorType = type
        config.pinnedServerCertificate = listener.tlsIdentity?.certificates.first
        return config
    }

    private func withHTTPSListener(
        _ remote: Database, configure: (inout URLEndpointListenerConfiguration) -> Void = { _ in },
        _ body: (URLEndpointListener) async throws -> Void
    ) async throws {
        var config = URLEndpointListenerConfiguration(collections: [try remote.defaultCollection()])
        configure(&config)
        let listener = URLEndpointListener(config: config)
        try await listener.start()
        do { try await body(listener) } catch { await listener.stop(); throw error }
        await listener.stop()
    }

    @Test func pushAndPullOverPinnedHTTPSWithAClientCertificate() async throws {
        let client = try TLSIdentity.createIdentity(commonName: "phone")
        try await withTwoDatabases { local, remote in
            try await saveDocuments(40, prefix: "l", in: try local.defaultCollection())
            try await saveDocuments(25, prefix: "r", in: try remote.defaultCollection())
            try await withHTTPSListener(
                remote,
                configure: {
                    $0.authenticator = ListenerCertificateAuthenticator(rootCertificates: [client.certificates[0]])
                }
            ) { listener in
                #expect(listener.urls[0].scheme == "https")
                var push = try tlsConfig(local, listener, .push)
                push.authenticator = ClientCertificateAuthenticator(identity: client)
                let pushed = try #require(await runToCompletion(try Replicator(config: push)).last)
                #expect(pushed.error == nil, "\(String(describing: pushed.error))")
                #expect(try await remote.defaultCollection().count == 65)
                var pull = try tlsConfig(local, listener, .pull)
                pull.authenticator = ClientCertificateAuthenticator(identity: client)
                let pulled = try #require(await runToCompletion(try Replicator(config: pull)).last)
                #expect(pulled.error == nil, "\(String(describing: pulled.error))")
                #expect(try await local.defaultCollection().count == 65)
                #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))

                // Without the client certificate: refused, permanently, at once (a continuous
                // replicator with unlimited attempts would otherwise retry for ever).
                var refused = try tlsConfig(local, listener, .pushAndPull)
                refused.continuous = true
                let started = ContinuousClock.now
                let status = try #require(await runToCompletion(try Replicator(config: refused)).last)
                #expect(status.activity == .stopped)
                #expect((status.error as? CouchetteError)?.code == .tls, "\(String(describing: status.error))")
                #expect((status.error as? CouchetteError)?.message.contains("client certificate refused") == true)
                #expect(ContinuousClock.now - started < .seconds(10))
            }
        }
    }

    @Test func aWrongPinOrAnUntrustedServerStopsTheReplicatorWithoutRetrying() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(5, prefix: "l", in: try local.defaultCollection())
            try await withHTTPSListener(remote) { listener in
                var pinned = try tlsConfig(local, listener, .push)
                pinned.pinnedServerCertificate = try TLSIdentity.createIdentity(commonName: "127.0.0.1").certificates[0]
                pinned.continuous = true
                var untrusted = try tlsConfig(local, listener, .push)
                untrusted.pinnedServerCertificate = nil  // the system trust store: a self-signed certificate is not in it
                untrusted.continuous = true
                for (config, reason) in [(pinned, "wrong pin"), (untrusted, "untrusted")] {
                    let started = ContinuousClock.now
                    let status = try #require(await runToCompletion(try Replicator(config: config)).last)
                    #expect(status.activity == .stopped)
                    let error = status.error as? CouchetteError
                    #expect(error?.code == .tls && error?.message.contains(reason) == true, "\(String(describing: status.error))")
                    #expect(ContinuousClock.now - started < .seconds(10))
                }
                #expect(try await remote.defaultCollection().count == 0)
                // The self-signed-only mode accepts the listener's anonymous identity.
                var selfSigned = try tlsConfig(local, listener, .push)
                selfSigned.pinnedServerCertificate = nil
                selfSigned.acceptOnlySelfSignedServerCertificate = true
                let status = try #require(await runToCompletion(try Replicator(config: selfSigned)).last)
                #expect(status.error == nil, "\(String(describing: status.error))")
                #expect(try await remote.defaultCollection().count == 5)
            }
        }
    }
}
