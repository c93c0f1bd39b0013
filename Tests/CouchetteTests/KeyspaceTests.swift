import Foundation
import Testing

@testable import Couchette

/// Which remote database each collection of a `URLEndpoint` replication syncs with (see
/// `RemoteDatabaseNames`): one collection — the URL's database whatever its local name; several —
/// `remoteName`, else the keyspace a Couchette listener serves it under.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct KeyspaceTests {
    @Test func oneNamedCollectionSyncsWithTheDatabaseTheURLNames() async throws {
        try await withTwoDatabases { local, remote in
            let tasks = try await local.createCollection(name: "tasks", scope: "work")
            try await saveDocuments(4, prefix: "t", in: tasks)
            try await withListener([try remote.defaultCollection()]) { _, base in
                var config = ReplicatorConfiguration(target: URLEndpoint(url: try #require(URL(string: base + "/remote"))))
                config.addCollection(tasks)
                #expect(try #require(await runToCompletion(try Replicator(config: config)).last).error == nil)
                #expect(try await remote.defaultCollection().count == 4)
            }
        }
    }

    @Test func severalCollectionsUseRemoteNamesOrTheListenersKeyspaces() async throws {
        let directory = try TemporaryDirectory()
        let local = try directory.open("local"), remote = try directory.open("remote"), other = try directory.open("tasks")
        let items = try await local.createCollection(name: "items", scope: "shop")
        let tasks = try await local.createCollection(name: "tasks", scope: "work")
        let remoteItems = try await remote.createCollection(name: "items", scope: "shop")
        try await saveDocuments(2, prefix: "d", in: try local.defaultCollection())
        try await saveDocuments(3, prefix: "i", in: items)
        try await saveDocuments(5, prefix: "t", in: tasks)
        // Served as "remote", "remote.shop.items" and "tasks" (a CouchDB-legal name).
        try await withListener([try remote.defaultCollection(), remoteItems, try other.defaultCollection()]) { _, base in
            var config = ReplicatorConfiguration(target: URLEndpoint(url: try #require(URL(string: base + "/remote"))))
            config.addCollection(try local.defaultCollection())
            config.addCollection(items)
            var renamed = CollectionConfiguration()
            renamed.remoteName = "tasks"
            config.addCollection(tasks, config: renamed)
            #expect(try #require(await runToCompletion(try Replicator(config: config)).last).error == nil)
            #expect(try await remote.defaultCollection().count == 2)
            #expect(try await remoteItems.count == 3)
            #expect(try await other.defaultCollection().count == 5)
        }
        for database in [local, remote, other] { try await database.close() }
    }

    @Test func illegalOrSharedRemoteNamesAreRefused() async throws {
        try await withDatabase { db, _ in
            let tasks = try await db.createCollection(name: "tasks")
            let notes = try await db.createCollection(name: "notes")
            let url = URL(string: "http://127.0.0.1:5984/app")!
            func config(_ names: [String?]) -> ReplicatorConfiguration {
                var config = ReplicatorConfiguration(target: URLEndpoint(url: url))
                for (collection, name) in zip([tasks, notes], names) {
                    var collectionConfig = CollectionConfiguration()
                    collectionConfig.remoteName = name
                    config.addCollection(collection, config: collectionConfig)
                }
                return config
            }
            for bad in ["Tasks", "1tasks", "app.tasks", "tasks db", "", "a.b.c.d"] {
                _ = await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: config([bad, nil])) }
            }
            _ = await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: config(["same", "same"])) }
            _ = await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: config(["app._default.notes", nil])) }
            for good in [["tasks", "notes"], ["a_b$c(d)+e-f/g", nil], ["app._default.tasks", "n"]] {
                #expect(throws: Never.self) { _ = try Replicator(config: config(good)) }
            }
        }
    }

    @Test func theCommandLineReplicatesANamedCollectionIntoTheURLsDatabase() async throws {
        try await withDatabase("served") { served, directory in
            try await withListener([try served.defaultCollection()]) { _, base in
                let local = directory.path + "/local"
                #expect(try await CLI.run(["put", local, "a", #"{"n":1}"#, "--collection", "tasks"]).status == 0)
                let pushed = try await CLI.run(["replicate", local, base + "/served", "--collection", "tasks", "--push"])
                #expect(pushed.status == 0, "\(pushed.stderr)")
                #expect(pushed.stdout.hasPrefix("Pushed 1 document, pulled 0, skipped 0 in "), "\(pushed.stdout)")
                #expect(try await served.defaultCollection().document(id: "a")?.int(forKey: "n") == 1)
            }
        }
    }
}
