extension QueryPlan {
    /// What `explain()` prints after the main scan's own line: its alias, then one line per later
    /// step. Derived from the plan alone, so what is printed is what runs.
    var explanationTail: String {
        var explanation = [" AS \(sources[0].alias)"]
        if mainFilter != nil { explanation.append("FILTER \(sources[0].alias) BEFORE JOINS") }
        for stage in stages {
            switch stage {
            case .join(let kind, let source, let scan, _, let hash):
                let method = hash == nil ? "nested loop" : hash!.innerIsDocumentID ? "lookup by id" : "hash"
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
