import Testing

@testable import Couchette

/// The database's observation task group, where live-query evaluations run.
@Suite(.tags(.concurrency)) struct ObservationTasksTests {
    @Test func submittedJobsRunAsChildTasks() async {
        let tasks = ObservationTasks()
        let ran = Locked(0)
        for _ in 0..<10 { #expect(tasks.submit { ran.withLock { $0 += 1 } }) }
        #expect(await eventually { ran.withLock { $0 } == 10 })
        tasks.close()
    }

    @Test func nothingRunsAfterClose() async throws {
        let tasks = ObservationTasks()
        tasks.close()
        let ran = Locked(false)
        #expect(!tasks.submit { ran.withLock { $0 = true } })
        try await Task.sleep(for: .milliseconds(50))
        #expect(!ran.withLock { $0 })
    }

    @Test func closingTheDatabaseClosesItsObservationGroup() async throws {
        try await withDatabase { database, _ in
            let query = try database.createQuery("SELECT COUNT(*) AS n FROM _default")
            var changes = query.changes().makeAsyncIterator()
            #expect(await changes.next() != nil)
            try await database.close()
            #expect(!database.observation.tasks.submit {})
        }
    }
}
