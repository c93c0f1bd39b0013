extension QueryPlan {
    /// What `explain()` prints after the main scan's own line: its alias, then one line per later
    /// step. Derived from the plan and the indexes of `snapshot` as ``Executor`` chooses them, so
    /// what is printed is what runs.
    func explanationTail(_ snapshot: StoreSnapshot) throws -> String {
        var explanation = [" AS \(sources[0].alias)"]
        if mainFilter != nil { explanation.append("FILTER \(sources[0].alias) BEFORE JOINS") }
        for stage in stages {
            switch stage {
            case .join(let kind, let source, let scan, _, let hash):
                var method = hash == nil ? "nested loop" : hash!.innerIsDocumentID ? "lookup by id" : "hash"
                if let hash, !hash.innerIsDocumentID, case .collection(let spec) = sources[source].kind,
                    let join = try IndexJoin.choose(snapshot, spec, innerKey: hash.innerKey, includeDeleted: sources[source].includeDeleted)
                {
                    method = "index nested loop USING \(join.index.name)"
                }
                explanation.append("\(kind.rawValue) JOIN \(scan) AS \(sources[source].alias) (\(method))")
            case .unnest(let source, _):
                explanation.append("UNNEST AS \(sources[source].alias)")
            }
        }
        if filter != nil { explanation.append("FILTER") }
        if isAggregating { explanation.append("GROUP (\(groupKeys.count) keys, \(aggregates.count) aggregates)") }
        if having != nil { explanation.append("HAVING") }
        explanation.append("PROJECT " + columnNames.joined(separator: ", "))
        if distinct { explanation.append("DISTINCT (hash)") }
        if !order.isEmpty { explanation.append("SORT (\(order.count) keys\(limit != nil ? ", top-k" : ""))") }
        if limit != nil || offset != nil { explanation.append("LIMIT/OFFSET") }
        return explanation.joined(separator: "\n")
    }
}
