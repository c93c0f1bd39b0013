import Foundation
import Testing

@testable import Couchette

/// Who commits a write and who resumes its caller: a lone saver commits on its own thread (no
/// writer thread, no hand-off); writes queued while a commit runs go to the writer thread, which
/// resumes each caller of a group itself, once the commit's observers have run.
@Suite(.tags(.concurrency)) struct CommitHandOffTests {
    @Test func aLoneSaverCommitsOnItsOwnThread() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for i in 0..<20 { try await collection.save(document: MutableDocument(id: "d\(i)")) }
            #expect(try await collection.count == 20)
            #expect(database.statistics.totals == (commits: 20, writes: 20))
            #expect(!database.writer.hasStarted)
        }
    }

    /// A caller on an actor is never blocked by the disk sync (the actor stays free for its other
    /// work): the writer thread commits for it.
    @Test func aSaverOnAnActorLeavesTheCommitToTheWriterThread() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let saver = Saver()
            try await saver.save(collection, "on-an-actor")
            #expect(database.writer.hasStarted)
            #expect(database.statistics.totals == (commits: 1, writes: 1))
            #expect(try await collection.document(id: "on-an-actor") != nil)
        }
    }

    /// A write queued while a caller commits (here by the commit's own observer, as another
    /// task's save would be) is committed by the writer thread; once writes stop coming while
    /// commits run, the next lone save commits on its caller's thread again.
    @Test func writesQueuedWhileACallerCommitsGoToTheWriterThread() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let late = PendingWrite([.save(collection.spec, id: "late", body: Document.emptyBody, base: nil, control: .lastWriteWins)])
            let threads = CommittingThreads()
            let queue = database.core.writeQueue
            let token = database.observation.observers.add { _ in
                if threads.record() == 1 { #expect(queue.append(late, mayCommitHere: false) == .queued) }
            }
            defer { database.observation.observers.remove(token) }
            try await collection.save(document: MutableDocument(id: "first"))
            await late.completion()
            #expect(try late.outcomes().count == 1)
            #expect(database.writer.hasStarted)
            try await collection.save(document: MutableDocument(id: "again"))
            let writer = await database.threadID()
            #expect(threads.all.map { $0 == writer } == [false, true, false])
            #expect(try await collection.count == 3)
        }
    }

    /// However the writer thread resumes a group's callers, each finds its own change published.
    @Test func aResumedSaverFindsItsChangePublished() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let published = Locked<Set<String>>([])
            let token = database.observation.observers.add { summary in
                published.withLock { $0.formUnion(summary.documentIDs.values.joined()) }
            }
            defer { database.observation.observers.remove(token) }
            let unpublished = Locked(0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        for i in 0..<25 {
                            let id = "w\(writer)-\(i)"
                            try await collection.save(document: MutableDocument(id: id))
                            if !published.withLock({ $0.contains(id) }) { unpublished.withLock { $0 += 1 } }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(unpublished.withLock { $0 } == 0)
            #expect(try await collection.count == 200)
            #expect(database.statistics.totals.commits < 200, "some commit carried several saves")
        }
    }
}

private actor Saver {
    func save(_ collection: Collection, _ id: String) async throws {
        try await collection.save(document: MutableDocument(id: id))
    }
}

/// Which thread ran each commit's observers: the committing thread.
private final class CommittingThreads: Sendable {
    private let threads = Locked<[pthread_t]>([])

    /// Records the calling thread; returns how many commits were recorded, this one included.
    @discardableResult func record() -> Int {
        let thread = pthread_self()
        return threads.withLock { threads in
            threads.append(thread)
            return threads.count
        }
    }

    var all: [pthread_t] { threads.withLock { $0 } }
}

extension Database {
    /// The writer thread, where the actor's own methods run.
    fileprivate func threadID() -> pthread_t { pthread_self() }
}
