# ruff: noqa  (a PyTorch program kept as its authors wrote it: tests/programs/README.md)
# torchvision's ResNet BasicBlock / Bottleneck idiom at toy size: nn.ReLU(inplace=True)
# after BatchNorm2d, `out += identity` on the block's output, a downsample branch,
# AdaptiveAvgPool2d, kaiming_normal_ init through self.modules(), SGD with weight decay
# and nesterov, and the in-place activations of nn.functional (hardtanh_, relu_ of a view,
# F.dropout(inplace=True) in eval mode).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class TinyResNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.inplanes = 8
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(8, 8)
        downsample = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
        self.layer2 = BasicBlock(8, 16, stride=2, downsample=downsample)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


model = TinyResNet()
optimizer = torch.optim.SGD(
    model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=True
)
criterion = nn.CrossEntropyLoss()
x = torch.randn(6, 3, 8, 8)
y = torch.randint(0, 5, (6,))

for step in range(4):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(
        f"step {step} loss {loss.item():.5f} conv1 grad norm {model.conv1.weight.grad.norm():.5f}"
    )

model.eval()
with torch.no_grad():
    print("eval logits", [f"{v:.4f}" for v in model(x)[0].tolist()])

# The in-place functional forms on a tensor in the graph.
w = torch.randn(4, 5, requires_grad=True)
h = w * 2
F.hardtanh_(h, -1.5, 1.5)
F.relu_(h[:, :2])  # relu_/elu_ save their output: the last in-place op before backward
out = F.dropout(h, p=0.5, training=False, inplace=True)
print("same tensor", out is h, "version", h._version)
(h * torch.arange(5.0)).sum().backward()
print("w.grad", [f"{v:.4f}" for v in w.grad.flatten().tolist()])

t = torch.randn(5)
r = nn.ReLU(inplace=True)(t)
s = F.leaky_relu(t[2:], 0.1, inplace=True)
print("relu in place", r is t, s._base is t, [f"{v:.4f}" for v in t.tolist()])
