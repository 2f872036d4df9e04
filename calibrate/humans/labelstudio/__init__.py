"""Label Studio: a labeling interface per metric (:mod:`.interface`), the push and pull through its
API (:mod:`.client`), export files read or refused (:mod:`.labels`), and the store of every label
ever pulled (:mod:`.store`)."""
