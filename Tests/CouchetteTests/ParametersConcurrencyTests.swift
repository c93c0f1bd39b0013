import Testing

@testable import Couchette

/// One ``Parameters`` object set from many threads at once keeps every value (its values sit
/// behind a lock), and a query assigned it while others change it keeps the copy it took.
@Suite(.tags(.concurrency)) struct ParametersConcurrencyTests {
    @Test func settersOnManyThreadsKeepEveryValue() async throws {
        let parameters = Parameters()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for number in 0..<200 {
                        parameters.setInt(number, forName: "t\(task)-\(number % 25)")
                        _ = parameters.value(forName: "t\((task + 1) % 8)-0")
                    }
                }
            }
        }
        for task in 0..<8 {
            for slot in 0..<25 {
                #expect(parameters.value(forName: "t\(task)-\(slot)") as? Int == 175 + slot)
            }
        }
    }

    @Test func assignmentTakesACopyWhileOthersSet() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for number in 0..<20 { try await collection.save(document: MutableDocument(id: "d\(number)", data: ["n": number])) }
            let query = try database.createQuery("SELECT META().id AS id FROM _ WHERE n = $n")
            let parameters = Parameters().setInt(3, forName: "n")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for number in 0..<500 { parameters.setInt(number % 20, forName: "n") }
                }
                group.addTask {
                    for _ in 0..<50 {
                        query.parameters = parameters
                        let copy = try #require(query.parameters?.value(forName: "n") as? Int)
                        // The query's copy does not change under it: its one row is that number.
                        let ids = try await query.execute().map { $0.string(at: 0)! }
                        #expect(ids == ["d\(copy)"])
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}
