import Foundation
import Testing

@testable import Couchette

/// The monitor of other processes' commits stops when the last change stream ends and starts
/// again with the next one. A commit of this instance under way at that moment reaches the new
/// stream once — from the writer, as the stream is open when it commits — and never a second
/// time as another process's, although the new monitor's baseline snapshot misses it.
@Suite(.serialized, .tags(.concurrency)) struct MonitorRestartTests {
    @Test func aCommitUnderWayWhileTheMonitorRestartsIsReportedOnce() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let external = database.observation.external
            let restarter = MonitorRestarter(collection, external: external, stream: collection.changes())
            database.observation.observers.add(transactionObserver: restarter)
            #expect(external.isMonitoring)
            try await collection.save(document: MutableDocument(id: "during"))
            let stream = try #require(restarter.reopened.withLock { $0 })
            try #require(restarter.monitorStopped.withLock { $0 }, "the monitor stopped while the commit was under way")
            #expect(await stream.next(timeout: .seconds(5))?.documentIDs == ["during"])
            // The monitor's next look (made here, not left to its timing) finds nothing of another
            // process's: the commit was this instance's.
            external.poll()
            try await collection.save(document: MutableDocument(id: "after"))
            #expect(await stream.next(timeout: .seconds(5))?.documentIDs == ["after"])
            #expect(await stream.next(timeout: .milliseconds(300)) == nil, "no event reported a commit twice")
        }
    }
}

/// Inside the first write transaction it is told about, ends the only change stream, waits until
/// the monitor has stopped (it looks at least once a second), and opens a new stream from
/// another thread, as a reader would at that moment.
private final class MonitorRestarter: TransactionObserver {
    let collection: Collection
    let external: ExternalChanges
    let stream: Locked<ChangeStream<CollectionChange>?>
    let reopened = Locked<ChangeStream<CollectionChange>?>(nil)
    let monitorStopped = Locked(false)

    init(_ collection: Collection, external: ExternalChanges, stream: ChangeStream<CollectionChange>) {
        self.collection = collection
        self.external = external
        self.stream = Locked(stream)
    }

    func willCommit(transactionID: UInt64, _ writes: OwnWrites) {
        // The last copy of the stream goes: its observer is removed, the monitor stops soon.
        let hadStream = stream.withLock { stream in
            defer { stream = nil }
            return stream != nil
        }
        guard hadStream else { return }
        let deadline = ContinuousClock.now + .seconds(5)
        while external.isMonitoring && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        monitorStopped.withLock { $0 = !external.isMonitoring }
        let changes = changesOpenedOnAnotherThread(collection)
        reopened.withLock { $0 = changes }
    }

    func commitFailed(transactionID: UInt64) {}
    func willCompact() {}
    func didCompact() {}
}
