// Hand-written host file of the AddCustom operator (msOpGen layout). The tiling itself comes
// from ascend-tune: add_custom_tiling_select.h picks the tuned configuration for the runtime
// shape and fills AddCustomTilingData, block dim, tiling key and workspace.
#include "add_custom_tiling.h"
#include "add_custom_tiling_select.h"
#include "register/op_def_registry.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    add_custom_tuned::Shape shape{};
    shape.totalLength = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    return add_custom_tuned::ApplyTuning(context, shape);  // the one line
}
}  // namespace optiling

namespace ops {
class AddCustom : public OpDef {
public:
    explicit AddCustom(const char* name) : OpDef(name) {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Input("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(AddCustom);
}  // namespace ops
