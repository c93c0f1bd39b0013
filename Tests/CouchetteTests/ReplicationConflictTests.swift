import Foundation
import Testing
@testable import Couchette

/// Conflicts made by editing one document on both sides, resolved after pulling, until both
/// databases hold identical revision trees.
@Suite struct ReplicationConflictTests {
    /// Saves `doc` on both sides, replicates it, then edits it differently on each side.
    static func makeConflict(_ local: Database, _ remote: Database, localEdits: Int = 1, remoteEdits: Int = 1) async throws {
        let mine = try local.defaultCollection()
        let theirs = try remote.defaultCollection()
        try await mine.save(document: MutableDocument(id: "doc").setString("base", forKey: "v").setValue(["base"], forKey: "tags"))
        _ = await runToCompletion(try Replicator(config: try makeConfig(local, remote, .push)))
        for n in 0..<localEdits {
            let edit = try #require(try await mine.document(id: "doc")).toMutable()
            try await mine.save(document: edit.setString("local-\(n)", forKey: "v").setValue(["base", "local"], forKey: "tags"))
        }
        for n in 0..<remoteEdits {
            let edit = try #require(try await theirs.document(id: "doc")).toMutable()
            try await theirs.save(document: edit.setString("remote-\(n)", forKey: "v").setValue(["base", "remote"], forKey: "tags"))
        }
    }

    /// Runs push-and-pull until a run changes nothing more (at most 4 runs).
    static func converge(_ local: Database, _ remote: Database, _ collectionConfig: CollectionConfiguration? = nil) async throws {
        for _ in 0..<4 {
            let replicator = try Replicator(config: try makeConfig(local, remote, .pushAndPull, collectionConfig))
            let last = await runToCompletion(replicator).last
            #expect(last?.error == nil)
            if last?.progress.total == 0 { return }
        }
    }

    @Test func defaultResolverKeepsTheCouchDBWinnerOnBothSides() async throws {
        try await withTwoDatabases { local, remote in
            try await Self.makeConflict(local, remote, localEdits: 1, remoteEdits: 2)
            try await Self.converge(local, remote)
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            let kept = try #require(try await mine.document(id: "doc"))
            #expect(kept.string(forKey: "v") == "remote-1")  // the higher generation wins
            #expect(try await theirs.document(id: "doc")?.revisionID == kept.revisionID)
            #expect(try treeShape(mine, "doc") == treeShape(theirs, "doc"))
            #expect(try mine.revisionTree(id: "doc").liveLeaves.count == 1)
            #expect(try theirs.revisionTree(id: "doc").liveLeaves.count == 1)
            try await local.performMaintenance(type: .integrityCheck)
            try await remote.performMaintenance(type: .integrityCheck)
        }
    }

    struct MergeTags: ConflictResolverProtocol {
        func resolve(conflict: Conflict) -> Document? {
            guard let local = conflict.localDocument, let remote = conflict.remoteDocument else { return nil }
            let tags = Set(local.array(forKey: "tags")?.toArray() as? [String] ?? [])
                .union(remote.array(forKey: "tags")?.toArray() as? [String] ?? [])
            let merged = local.toMutable()
            merged.setValue(tags.sorted(), forKey: "tags")
            merged.setString("merged", forKey: "v")
            return Document(merged)
        }
    }

    @Test func customResolverMergesAndTheMergeReplicates() async throws {
        try await withTwoDatabases { local, remote in
            try await Self.makeConflict(local, remote)
            var config = CollectionConfiguration()
            config.conflictResolver = MergeTags()
            try await Self.converge(local, remote, config)
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            let merged = try #require(try await mine.document(id: "doc"))
            #expect(merged.string(forKey: "v") == "merged")
            #expect(merged.array(forKey: "tags")?.toArray() as? [String] == ["base", "local", "remote"])
            #expect(try await theirs.document(id: "doc")?.revisionID == merged.revisionID)
            #expect(try treeShape(mine, "doc") == treeShape(theirs, "doc"))
            #expect(try theirs.revisionTree(id: "doc").liveLeaves.count == 1)
        }
    }

    struct DeleteOnConflict: ConflictResolverProtocol {
        func resolve(conflict: Conflict) -> Document? { nil }
    }

    @Test func resolverReturningNilDeletesTheDocumentEverywhere() async throws {
        try await withTwoDatabases { local, remote in
            try await Self.makeConflict(local, remote)
            var config = CollectionConfiguration()
            config.conflictResolver = DeleteOnConflict()
            try await Self.converge(local, remote, config)
            #expect(try await local.defaultCollection().document(id: "doc") == nil)
            #expect(try await remote.defaultCollection().document(id: "doc") == nil)
            #expect(try treeShape(local.defaultCollection(), "doc") == treeShape(remote.defaultCollection(), "doc"))
        }
    }

    @Test func pullOnlyResolvesLocally() async throws {
        try await withTwoDatabases { local, remote in
            try await Self.makeConflict(local, remote)
            _ = await runToCompletion(try Replicator(config: try makeConfig(local, remote, .pull)))
            let tree = try local.defaultCollection().revisionTree(id: "doc")
            #expect(tree.liveLeaves.count == 1)
            #expect(tree.leafIndices.count == 2)  // the losing branch ends in a tombstone
            #expect(try remote.defaultCollection().revisionTree(id: "doc").liveLeaves.count == 1)  // nothing pushed
        }
    }
}
