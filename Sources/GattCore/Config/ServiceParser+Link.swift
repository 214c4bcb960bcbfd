extension ServiceParser {
    // MARK: - Cross-checks

    /// Checks ids, resolves includes (no unknown ids, self-includes or
    /// cycles), checks that control/persist characteristics are addressable
    /// and that the table fits the handle space. Linear in the number of
    /// services, includes and characteristics (plus sorting the ids once).
    static func link(_ services: [ParsedService], _ r: ConfigReader, servicesOffset: Int) -> [ServiceDefinition] {
        // Ids share one namespace across services and characteristics.
        var owners: [String: String] = [:]
        var serviceIndex: [String: Int] = [:]
        for (si, s) in services.enumerated() {
            var all: [(ParsedID, String)] = []
            if let id = s.id { all.append((id, s.path)) }
            for c in s.characteristics { if let id = c.id { all.append((id, c.path)) } }
            for (id, owner) in all {
                if let first = owners[id.value] {
                    r.error(id.path, "id \(ConfigReader.quoted(id.value)) is already used by \(first)", at: id.offset)
                } else {
                    owners[id.value] = owner
                    if owner == s.path { serviceIndex[id.value] = si }
                }
            }
        }

        // Includes.
        var defs = services.map(\.definition)
        var edges: [[(target: Int, path: String, offset: Int)]] = Array(repeating: [], count: services.count)
        var serviceIDs: [String]?  // sorted, for hints; built at the first unknown include
        for (si, s) in services.enumerated() {
            var included: Set<Int> = []
            for inc in s.includes {
                guard let target = serviceIndex[inc.name] else {
                    let name = ConfigReader.quoted(inc.name)
                    var m = "no service with id \(name)"
                    if let owner = owners[inc.name] {
                        m += " (\(name) is the characteristic \(owner); includes name services)"
                    } else {
                        if serviceIDs == nil { serviceIDs = serviceIndex.keys.sorted() }
                        if let hint = r.hint(for: inc.name, in: serviceIDs ?? []) { m += "; did you mean \"\(hint)\"?" }
                    }
                    r.error(inc.path, m, at: inc.offset)
                    continue
                }
                if target == si {
                    r.error(inc.path, "a service cannot include itself", at: inc.offset)
                    continue
                }
                guard included.insert(target).inserted else {
                    r.error(inc.path, "\(ConfigReader.quoted(inc.name)) is already included", at: inc.offset)
                    continue
                }
                edges[si].append((target, inc.path, inc.offset))
                defs[si].includes.append(target)
            }
        }
        reportIncludeCycles(services, edges, r)

        // Addressing: control/persist characteristics without an id need a unique UUID.
        var uuidOwners: [BluetoothUUID: [String]] = [:]
        for u in builtInCharacteristicUUIDs { uuidOwners[u, default: []].append("a built-in characteristic") }
        for s in services { for c in s.characteristics { uuidOwners[c.definition.uuid, default: []].append(c.path) } }
        for s in services {
            for c in s.characteristics where c.id == nil && c.definition.valueSource != .stored {
                guard let other = uuidOwners[c.definition.uuid]?.first(where: { $0 != c.path }) else { continue }
                let why = c.definition.valueSource == .deferred ? "\"handler\": \"control\"" : "\"persist\": true"
                r.error(ConfigReader.member(c.path, "id"), "required: this characteristic has \(why) and is addressed by id or UUID, but its UUID \(c.definition.uuid) is also used by \(other)", at: c.offset)
            }
        }

        // Handle space: 13 built-in attributes plus every service's.
        var count = 13
        for d in defs {
            count += 1 + d.includes.count
            for c in d.characteristics { count += GATTDatabase.Builder.attributeCount(c) }
        }
        if count > 0xFFFF {
            r.error("services", "the database needs \(count) attributes; the handle space holds at most 65535", at: servicesOffset)
        }
        return defs
    }

    /// The longest cycle written out in full; longer ones show their ends and a count.
    static let cycleLabelLimit = 8

    /// Depth-first over the include edges in document order; each back edge is one
    /// cycle. Iterative (an include chain of 100,000 services must not overflow the
    /// stack) and linear: stack positions are looked up, not searched.
    static func reportIncludeCycles(_ services: [ParsedService], _ edges: [[(target: Int, path: String, offset: Int)]], _ r: ConfigReader) {
        var state = Array(repeating: 0, count: services.count)  // 0 new, 1 on stack, 2 done
        var position = Array(repeating: 0, count: services.count)  // index in `stack` while on it
        var stack: [(service: Int, nextEdge: Int)] = []
        func label(_ i: Int) -> String { services[i].id.map { ConfigReader.shortened($0.value) } ?? services[i].path }
        func describeCycle(from start: Int, closingAt target: Int) -> String {
            // Only the labels shown are built: a long chain with many back edges stays linear.
            let length = stack.count - start + 1
            if length <= cycleLabelLimit {
                return (stack[start...].map { label($0.service) } + [label(target)]).joined(separator: " → ")
            }
            let head = stack[start..<start + cycleLabelLimit / 2].map { label($0.service) }
            let tail = [label(stack[stack.count - 1].service), label(target)]
            return (head + ["… (\(length - 1) services) …"] + tail).joined(separator: " → ")
        }
        for root in services.indices where state[root] == 0 {
            state[root] = 1
            position[root] = 0
            stack.append((root, 0))
            while let top = stack.last {
                let i = top.service
                guard top.nextEdge < edges[i].count else {
                    stack.removeLast()
                    state[i] = 2
                    continue
                }
                stack[stack.count - 1].nextEdge += 1
                let e = edges[i][top.nextEdge]
                if state[e.target] == 1 {
                    r.error(e.path, "include cycle: \(describeCycle(from: position[e.target], closingAt: e.target))", at: e.offset)
                } else if state[e.target] == 0 {
                    state[e.target] = 1
                    position[e.target] = stack.count
                    stack.append((e.target, 0))
                }
            }
        }
    }
}
