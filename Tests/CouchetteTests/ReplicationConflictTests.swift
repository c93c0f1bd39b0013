import Foundation
import Testing

@testable import Couchette

/// Conflicts made by editing one document on both sides, resolved after pulling, until both
/// databases hold identical revision trees.
@Suite(.tags(.concurrency)) struct ReplicationConflictTests {
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

    /// Each database has its own listener on its own port and runs its own push-and-pull
    /// replicator against the other's, both with the merging resolver: both sides resolve the
    /// conflict, and their resolutions (the same revision) converge.
    @Test func customResolverConvergesBetweenTwoListeningDatabases() async throws {
        try await withTwoDatabases { local, remote in
            try await Self.makeConflict(local, remote)
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            var resolving = CollectionConfiguration()
            resolving.conflictResolver = MergeTags()
            try await withListener([mine]) { localListener, _ in
                try await withListener([theirs]) { remoteListener, _ in
                    #expect(localListener.port != remoteListener.port)
                    let fromLocal = try makeConfig(local, URLEndpoint(url: remoteListener.urls[0]), .pushAndPull, resolving)
                    let fromRemote = try makeConfig(remote, URLEndpoint(url: localListener.urls[0]), .pushAndPull, resolving)
                    var settled = false
                    for _ in 0..<4 where !settled {
                        let (left, right) = (try Replicator(config: fromLocal), try Replicator(config: fromRemote))
                        async let leftRun = runToCompletion(left)
                        async let rightRun = runToCompletion(right)
                        let (leftLast, rightLast) = await (leftRun.last, rightRun.last)
                        #expect(leftLast?.error == nil && rightLast?.error == nil)
                        settled = leftLast?.progress.total == 0 && rightLast?.progress.total == 0
                    }
                    #expect(settled)
                }
            }
            let merged = try #require(try await mine.document(id: "doc"))
            #expect(merged.string(forKey: "v") == "merged")
            #expect(merged.array(forKey: "tags")?.toArray() as? [String] == ["base", "local", "remote"])
            try await expectConverged(mine, theirs)
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

    @Test func continuousReplicationResolvesConcurrentEditsOnBothSides() async throws {
        try await withTwoDatabases { local, remote in
            var config = try makeConfig(local, remote)
            config.continuous = true
            let replicator = try Replicator(config: config)
            await replicator.start()
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            for round in 0..<5 {
                // Both sides edit the same documents at once with different contents, so
                // conflicts arrive while the replicator runs.
                async let left: Void = Self.edit(mine, side: "local", round: round)
                async let right: Void = Self.edit(theirs, side: "remote", round: round)
                _ = try await (left, right)
            }
            let ids = (0..<6).flatMap { n in ["live-0-\(n)", "live-1-\(n)"] }
            let converged = await eventually(timeout: .seconds(30)) {
                guard let left = try? currentRevisions(mine), let right = try? currentRevisions(theirs), left == right,
                    left.count == ids.count
                else { return false }
                return ids.allSatisfy { id in
                    (try? treeShape(mine, id) == treeShape(theirs, id)) == true
                        && (try? mine.revisionTree(id: id).liveLeaves.count) == 1
                }
            }
            #expect(converged)
            #expect(try mine.revisionTree(id: "live-0-0").leafIndices.count > 1, "no conflict was made")
            await replicator.stop()
            try await local.performMaintenance(type: .integrityCheck)
            try await remote.performMaintenance(type: .integrityCheck)
        }
    }

    /// Saves `live-<round % 2>-0…5` on one side, last write wins, with contents naming the side.
    static func edit(_ collection: Collection, side: String, round: Int) async throws {
        for n in 0..<6 {
            let id = "live-\(round % 2)-\(n)"
            let document = try await collection.document(id: id)?.toMutable() ?? MutableDocument(id: id)
            try await collection.save(document: document.setString("\(side) \(round)", forKey: "v"))
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
