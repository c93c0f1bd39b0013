import Foundation
import Testing

@testable import Couchette

/// Every commit asks ``CommitObservers/count`` whether to collect ids: the count follows
/// registrations, removals and close, and a lone saver's commits (made on its own thread, most of
/// them without a yield) still reach every observer registered before them, in order.
@Suite struct CommitObserversCountTests {
    @Test func theCountFollowsAddRemoveAndClose() {
        let observers = CommitObservers()
        #expect(observers.count == 0)
        let first = observers.add { _ in }
        let second = observers.add({ _ in }, onClose: {})
        _ = observers.add(nil, onClose: {})  // close-only: not counted
        #expect(observers.count == 2)
        observers.remove(first)
        #expect(observers.count == 1)
        observers.remove(first)  // twice: nothing more
        #expect(observers.count == 1)
        observers.close()
        #expect(observers.count == 0)
        observers.remove(second)
        #expect(observers.count == 0)
    }

    @Test func loneSavesReachAnObserverInCommitOrder() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let seen = Locked<[String]>([])
            let token = database.observation.observers.add { summary in
                seen.withLock { $0 += summary.documentIDs[collection.spec] ?? [] }
            }
            defer { database.observation.observers.remove(token) }
            let ids = (0..<30).map { "d\($0)" }
            for id in ids {
                try await collection.save(document: MutableDocument(id: id))
                #expect(seen.withLock { $0.last } == id, "published before the save returned")
            }
            #expect(seen.withLock { $0 } == ids)
            #expect(!database.writer.hasStarted, "the saves were committed on their caller's thread")
        }
    }
}
